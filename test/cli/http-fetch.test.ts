/** The CLI's fetch over node:http against a real HTTP server: what the CLI relies on fetch for. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpFetch } from '../../cli/http-fetch.ts';
import { freePort } from '../../services/core/index.ts';

interface Seen {
  method: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: (request: http.IncomingMessage, response: http.ServerResponse, seen: Seen) => void) {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => handler(request, response, { method: request.method!, headers: request.headers, body }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('httpFetch', () => {
  it('sends a JSON body with its length and reads status, headers and body', async () => {
    let seen: Seen | undefined;
    const url = await serve((_request, response, s) => {
      seen = s;
      response.writeHead(201, { 'content-type': 'application/json', 'x-one': 'a' });
      response.end('{"ok":true}');
    });
    const answer = await httpFetch(`${url}/api/x?y=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Basic abc' },
      body: JSON.stringify({ name: 'ünïcode' }),
    });
    expect(answer.status).toBe(201);
    expect(answer.ok).toBe(true);
    expect(answer.headers.get('x-one')).toBe('a');
    expect(await answer.json()).toEqual({ ok: true });
    expect(seen!.method).toBe('POST');
    expect(seen!.body).toBe('{"name":"ünïcode"}');
    expect(seen!.headers['content-length']).toBe(String(Buffer.byteLength('{"name":"ünïcode"}')));
    expect(seen!.headers['transfer-encoding']).toBeUndefined();
    expect(seen!.headers.authorization).toBe('Basic abc');
  });

  it('streams a body of known length without chunking (blob stores refuse chunked uploads)', async () => {
    let seen: Seen | undefined;
    const url = await serve((_request, response, s) => {
      seen = s;
      response.end('stored');
    });
    const parts = ['abc', 'def', 'ghi'];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = parts.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    const answer = await httpFetch(`${url}/blob`, {
      method: 'PUT',
      headers: { 'content-length': '9' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(await answer.text()).toBe('stored');
    expect(seen!.body).toBe('abcdefghi');
    expect(seen!.headers['content-length']).toBe('9');
    expect(seen!.headers['transfer-encoding']).toBeUndefined();
  });

  it('hands the body over as it arrives (the event stream) and stops on abort', async () => {
    let serverResponse: http.ServerResponse | undefined;
    const url = await serve((_request, response) => {
      serverResponse = response;
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('event: logs\n\n');
    });
    const abort = new AbortController();
    const answer = await httpFetch(`${url}/events`, { signal: abort.signal });
    const reader = answer.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('event: logs\n\n');
    expect(serverResponse!.writableEnded).toBe(false);
    const closed = new Promise((resolve) => serverResponse!.on('close', resolve));
    abort.abort(new Error('stop'));
    await expect(reader.read()).rejects.toThrow();
    await closed;
  });

  it('answers 204 and HEAD with no body', async () => {
    const url = await serve((request, response) => {
      response.writeHead(request.method === 'HEAD' ? 200 : 204, { 'content-length': '0' });
      response.end();
    });
    const empty = await httpFetch(`${url}/x`, { method: 'DELETE' });
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const head = await httpFetch(`${url}/x`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBeNull();
  });

  it('rejects as undici does when nothing listens: TypeError with the cause code', async () => {
    const port = await freePort();
    const error = await httpFetch(`http://127.0.0.1:${port}/`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toBe('fetch failed');
    expect(((error as TypeError).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
  });

  it('rejects with the reason of a signal aborted before sending', async () => {
    const url = await serve((_request, response) => response.end('x'));
    const abort = new AbortController();
    abort.abort(new Error('cancelled'));
    await expect(httpFetch(url, { signal: abort.signal })).rejects.toThrow('cancelled');
  });
});
