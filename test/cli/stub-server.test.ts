/**
 * The CLI against a stub HTTP server, for what the real control plane of this branch cannot show
 * on demand: the deployment event stream (GET /api/deployment/events, built in parallel to this
 * wire format) with a connection dropped mid-stream and resumed by Last-Event-ID, and 503 +
 * Retry-After while the server's database is down.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { cleanup, tempDir } from '../e2e/harness.ts';
import { printed, runCli } from './run-cli.ts';

/** Larger than 2^53: a JSON.parse of these would change their last digits. */
const TICKS = ['638590487604430630', '638590487604430631', '638590487604430777'];
const DEPLOYMENT = 'dep-1';

const status = (Status: string, last: string) => ({
  Status,
  ErrorCount: 0,
  WarningCount: 0,
  LastLogDate: '2026-11-23T10:00:00.000+00:00',
  LastLogDateTick: last,
  LastUpdate: '2026-11-23T10:00:00.000Z',
  CancellationRequestedDate: null,
  LastAttemptDate: null,
  CompleteDate: Status === 'Completed' ? '2026-11-23T10:00:01.000Z' : null,
});

const log = (tick: string, Data: string, extra: Record<string, unknown> = {}) => ({
  CreatedLocalTime: null,
  CreatedUtc: '2026-11-23T10:00:00.000Z',
  CreatedUtcTick: tick,
  Data,
  DeploymentId: DEPLOYMENT,
  DeploymentMonitorId: null,
  ErrorCount: 0,
  WarningCount: 0,
  ExceptionData: null,
  Id: `log-${tick}`,
  LogLevel: 'Information',
  ParentLogId: null,
  StepId: null,
  ...extra,
});

/** JSON with the tick strings written as bare integers, as the server sends them. */
const wire = (value: unknown) => JSON.stringify(value).replace(/"(\d{16,})"/g, '$1');

const servers: http.Server[] = [];
afterAll(cleanup);

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** `gantry machine list`'s answers: one workspace, no machines in it. */
const workspaceWithNoMachines: http.RequestListener = (request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  if (request.url === '/api/workspace')
    response.end(
      JSON.stringify({
        workspaces: [{ workspaceId: 'w1', organizationId: 'o', name: 'Main', packageStoreRegion: null }],
        totalCount: 1,
      }),
    );
  else response.end(JSON.stringify({ machines: [], totalCount: 0 }));
};

const credentials = (url: string) => ({ GANTRY_URL: url, GANTRY_ACCOUNT_ID: 'ci', GANTRY_API_KEY: 'secret-key' });

describe('waiting on the deployment event stream', () => {
  it('streams the lines, resumes after a dropped connection with Last-Event-ID, and ends on `end`', async () => {
    const requests: Array<{ path: string; lastEventId: string | undefined; authorization: string | undefined }> = [];
    const url = await serve((request, response) => {
      const target = new URL(request.url!, 'http://stub');
      requests.push({
        path: `${target.pathname}${target.search}`,
        lastEventId: request.headers['last-event-id'] as string | undefined,
        authorization: request.headers.authorization,
      });
      if (target.pathname !== '/gantry/api/deployment/events') {
        response.writeHead(500).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      if (request.headers['last-event-id'] === undefined) {
        const stepEntry = log(TICKS[0]!, "Step 'Build'", { StepId: 's1', Id: 'dep-1.s1' });
        const target = log(TICKS[1]!, "Running 'Build' on web-1", { StepId: 's1', ParentLogId: 'dep-1.s1', Id: 't1' });
        response.write(`: keepalive\n\nevent: status\ndata: ${wire(status('Running', TICKS[1]!))}\n\n`);
        response.write(`id: ${TICKS[1]}\nevent: logs\ndata: ${wire([stepEntry, target])}\n\n`);
        // The connection breaks off before the deployment ends.
        setTimeout(() => response.destroy(), 50);
        return;
      }
      const line = log(TICKS[2]!, 'compiled', { StepId: 's1', ParentLogId: 't1' });
      response.write(`id: ${TICKS[2]}\nevent: logs\ndata: ${wire([line])}\n\n`);
      response.write(`event: status\ndata: ${wire(status('Completed', TICKS[2]!))}\n\n`);
      response.end(`event: end\ndata: ${wire(status('Completed', TICKS[2]!))}\n\n`);
    });

    // Behind a path prefix, given as the Jaws SDK's base URL (ending in /api).
    const run = await runCli(
      ['deployment', 'wait', DEPLOYMENT, '--progress', '-o', 'json'],
      credentials(`${url}/gantry/api`),
    );
    expect(run.code, printed(run)).toBe(0);
    expect(run.json()).toEqual({
      outcome: 'Completed',
      deployments: [
        {
          deploymentId: DEPLOYMENT,
          environmentName: null,
          status: 'Completed',
          errorCount: 0,
          warningCount: 0,
          completedUtc: '2026-11-23T10:00:01.000Z',
        },
      ],
    });
    expect(requests.map((r) => [r.path, r.lastEventId])).toEqual([
      [`/gantry/api/deployment/events?deploymentId=${DEPLOYMENT}`, undefined],
      [`/gantry/api/deployment/events?deploymentId=${DEPLOYMENT}`, TICKS[1]],
    ]);
    expect(requests[0]!.authorization).toBe(`Basic ${Buffer.from('ci:secret-key').toString('base64')}`);
    const lines = run.stderr.split('\n').filter((l) => l.startsWith('['));
    expect(lines).toEqual([
      "[Build] Step 'Build'",
      "[Build @ web-1] Running 'Build' on web-1",
      '[Build @ web-1] compiled',
    ]);
  });
});

describe('retries', () => {
  it('retries reads through 503 + Retry-After while the database is down, then succeeds', async () => {
    let refusals = 0;
    const url = await serve((request, response) => {
      if (request.url === '/api/workspace' && refusals < 2) {
        refusals++;
        response.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' });
        response.end(JSON.stringify({ error: 'Service unavailable', errorcode: 1001, requestid: null }));
        return;
      }
      workspaceWithNoMachines(request, response);
    });
    const run = await runCli(['machine', 'list', '-o', 'json'], credentials(url));
    expect(run.code, printed(run)).toBe(0);
    expect(refusals).toBe(2);
    expect(run.stderr.match(/answered 503; retrying/g)).toHaveLength(2);
    expect(run.json()).toEqual({ workspaceId: 'w1', machines: [] });
  });

  it('exits 6 when the server keeps answering 5xx', async () => {
    const url = await serve((_request, response) => {
      response.writeHead(503, { 'retry-after': '0', 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'Service unavailable', errorcode: 1001, requestid: 'r1' }));
    });
    const run = await runCli(['status'], { ...credentials(url), GANTRY_RETRY_TIMEOUT: '500ms' });
    expect(run.code, printed(run)).toBe(6);
    expect(run.stderr).toContain('Error: Service unavailable (HTTP 503, errorcode 1001, request r1)');
  });
});

describe("the CLI's start", () => {
  it("answers a command without loading Node's undici (its own Request, Response and Headers: ~20 ms less)", async () => {
    const url = await serve(workspaceWithNoMachines);
    // Preloaded into the CLI's process: at exit, the internal modules Node loaded.
    const preload = path.join(tempDir('gantry-cli-preload-'), 'modules.cjs');
    writeFileSync(
      preload,
      `process.on('exit', () => process.stderr.write('modules: ' + process.moduleLoadList.filter((m) => /undici|http/.test(m)).join(',') + '\\n'));`,
    );
    const run = await runCli(['machine', 'list', '-o', 'json'], {
      ...credentials(url),
      NODE_OPTIONS: `--require ${preload}`,
    });
    expect(run.code, printed(run)).toBe(0);
    expect(run.json()).toEqual({ workspaceId: 'w1', machines: [] });
    const modules = run.stderr.split('\n').find((line) => line.startsWith('modules: '));
    // The preload ran (node:http is there), and undici is not.
    expect(modules).toContain('NativeModule http');
    expect(modules).not.toContain('undici');
  });
});
