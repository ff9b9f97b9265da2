/**
 * The CLI's follower of a deployment (cli/deployment-stream.ts) in this process, against a stub
 * event stream: what a CLI process cannot show, since its exit closes every connection anyway.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createApi } from '../../cli/api.ts';
import { followDeployment } from '../../cli/deployment-stream.ts';
import { waitFor } from '../helpers/wait-for.ts';

const completed = JSON.stringify({
  Status: 'Completed',
  ErrorCount: 0,
  WarningCount: 0,
  LastLogDate: null,
  LastLogDateTick: '0',
  LastUpdate: '2026-11-29T10:00:00.000Z',
  CancellationRequestedDate: null,
  LastAttemptDate: null,
  CompleteDate: '2026-11-29T10:00:01.000Z',
});

let server: http.Server | null = null;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = null;
});

describe('followDeployment (event stream)', () => {
  it("closes the stream once it has read `end`, even when the server's response stays open", async () => {
    let closed = false;
    server = http.createServer((request, response) => {
      request.socket.once('close', () => (closed = true));
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      // The final status, then `end`; the response itself is never ended by the server.
      response.write(`event: status\ndata: ${completed}\n\nevent: end\ndata: ${completed}\n\n`);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const api = createApi({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      accountId: 'ci',
      apiKey: 'key',
      retryBudgetMs: 1_000,
    });
    const statuses: string[] = [];
    const final = await followDeployment(api, 'dep-1', {
      onStatus: (status) => statuses.push(status.Status),
      onLogs: () => undefined,
      reconnectBudgetMs: 1_000,
    });
    expect(final.Status).toBe('Completed');
    expect(statuses).toEqual(['Completed', 'Completed']);
    await waitFor(() => closed, { timeoutMs: 2_000, description: 'the event stream closed by the client' });
  });
});
