/**
 * `fetch` over node:http and node:https, for the CLI. Node 20's global fetch (undici) costs a
 * short-lived process ~55 ms before its first answer — loading undici's HTTP client and compiling
 * its WebAssembly parser (llhttp) — which every CLI process pays once; node:http is already in
 * the binary. Measured with hyperfine here: a process making one request with fetch 121 ms, with
 * node:http 55 ms (`node -e 0`: 44 ms). bench/cli runs three CLI processes, so this is most of
 * what a pipeline pays beyond its script (issue #12's goal: ≤ 300 ms).
 *
 * Same contract as fetch for what the CLI uses: a Request or URL + init in, a WHATWG Response
 * out (streamed, so the event stream is read as it arrives); AbortSignal; a body that is a
 * stream is sent as one (the caller gives its Content-Length: blob stores refuse chunked
 * uploads), other bodies are read first and sent with their length; network errors reject with
 * TypeError('fetch failed', { cause }) as undici does, so callers read `cause.code`
 * (ECONNREFUSED…). Redirects are not followed (the API sends none). No response compression is
 * asked for, so bodies arrive as sent. In the CLI's process the Request, Response and Headers
 * used here are its own (light-fetch-classes.ts): Node's would load undici after all.
 */
import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

/** Statuses whose answers have no body (a Response refuses one for them). */
const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

export const httpFetch: typeof globalThis.fetch = async (input, init) => {
  const request = new Request(input, init);
  const url = new URL(request.url);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  request.signal.throwIfAborted();
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => (headers[name] = value));

  let body: Buffer | Readable | null = null;
  if (request.body !== null) {
    if (headers['content-length'] !== undefined) {
      body = Readable.fromWeb(request.body as NodeReadableStream<Uint8Array>);
    } else {
      body = Buffer.from(await request.arrayBuffer());
      headers['content-length'] = String(body.length);
    }
  }

  return new Promise<Response>((resolve, reject) => {
    const failed = (cause: unknown) => reject(new TypeError('fetch failed', { cause }));
    const outgoing = (url.protocol === 'https:' ? https : http).request(url, {
      method: request.method,
      headers,
      agent: agents[url.protocol as keyof typeof agents],
      signal: request.signal,
    });
    outgoing.on('error', (error) => {
      if (request.signal.aborted) reject(request.signal.reason as Error);
      else failed(error);
    });
    outgoing.on('response', (incoming) => {
      const answerHeaders = new Headers();
      for (let i = 0; i < incoming.rawHeaders.length; i += 2)
        answerHeaders.append(incoming.rawHeaders[i]!, incoming.rawHeaders[i + 1]!);
      const status = incoming.statusCode ?? 0;
      const empty = request.method === 'HEAD' || NULL_BODY_STATUSES.has(status);
      if (empty) incoming.resume();
      resolve(
        new Response(empty ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), {
          status,
          statusText: incoming.statusMessage ?? '',
          headers: answerHeaders,
        }),
      );
    });
    if (body === null) outgoing.end();
    else if (Buffer.isBuffer(body)) outgoing.end(body);
    else {
      body.on('error', (error) => outgoing.destroy(error));
      body.pipe(outgoing);
    }
  });
};
