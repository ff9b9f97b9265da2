/**
 * The CLI's own Headers, Request and Response (cli/light-fetch-classes.ts) behave as the
 * platform's (undici's, which this test process still has) for what the CLI and openapi-fetch
 * use, side by side on the same inputs.
 */
import { describe, expect, it } from 'vitest';
import { installLightFetchClasses, LightHeaders, LightRequest, LightResponse } from '../../cli/light-fetch-classes.ts';

type HeadersClass = new (init?: ConstructorParameters<typeof Headers>[0]) => Headers;
const both: Array<[string, HeadersClass]> = [
  ['platform', Headers],
  ['light', LightHeaders],
];

const streamOf = (...parts: string[]) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
      controller.close();
    },
  });

const caught = (fn: () => unknown) => {
  try {
    fn();
    return null;
  } catch (error) {
    return (error as Error).constructor.name;
  }
};

describe('Headers', () => {
  it('matches names without case, joins repeated values, iterates sorted, as the platform does', () => {
    const seen = both.map(([, H]) => {
      const headers = new H({ 'X-Trace': ' a ', Accept: 'application/json' });
      headers.append('x-trace', 'b');
      headers.set('Content-Type', 'text/plain');
      headers.append('Set-Cookie', 'one=1');
      headers.append('set-cookie', 'two=2');
      headers.delete('ACCEPT');
      const forEach: string[] = [];
      headers.forEach((value, name) => forEach.push(`${name}=${value}`));
      return {
        entries: [...headers],
        forEach,
        trace: headers.get('X-TRACE'),
        missing: headers.get('accept'),
        has: [headers.has('content-type'), headers.has('accept')],
        copied: [...new H(headers)],
        fromPairs: [
          ...new H([
            ['B', '2'],
            ['a', '1'],
          ]),
        ],
        cookies: headers.getSetCookie(),
      };
    });
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[1]!.trace).toBe('a, b');
  });

  it('refuses an invalid name or value as the platform does', () => {
    for (const [, H] of both) {
      expect(caught(() => new H({ 'bad name': 'x' }))).toBe('TypeError');
      expect(caught(() => new H({ ok: 'line\nbreak' }))).toBe('TypeError');
    }
  });
});

describe('Request', () => {
  const requestClasses = [Request, LightRequest as unknown as typeof Request];

  it('normalizes its URL and method, and gives its body back as text with the same default type', async () => {
    const seen = await Promise.all(
      requestClasses.map(async (R) => {
        const request = new R('http://example.test:80/a/../b?x=1', { method: 'post', body: 'héllo' });
        return {
          url: request.url,
          method: request.method,
          purge: new R('http://example.test/', { method: 'purge' }).method,
          type: request.headers.get('content-type'),
          text: await request.text(),
          used: request.bodyUsed,
        };
      }),
    );
    expect(seen[1]).toEqual(seen[0]);
  });

  it('refuses a body on GET, and a second read', async () => {
    for (const R of requestClasses) {
      expect(caught(() => new R('http://example.test/', { method: 'GET', body: 'x' }))).toBe('TypeError');
      const request = new R('http://example.test/', { method: 'PUT', body: 'x' });
      await request.text();
      await expect(request.text()).rejects.toThrow(TypeError);
    }
  });

  it('clones a streamed body (both read the same bytes), keeps headers and signal, and wraps another request', async () => {
    const controller = new AbortController();
    for (const R of requestClasses) {
      const request = new R('http://example.test/upload', {
        method: 'PUT',
        body: streamOf('one ', 'two'),
        headers: { 'content-length': '7' },
        signal: controller.signal,
        duplex: 'half',
      } as RequestInit);
      const copy = request.clone();
      expect(await copy.text()).toBe('one two');
      expect(await request.text()).toBe('one two');
      expect(copy.headers.get('content-length')).toBe('7');
      const wrapped = new R(new R('http://example.test/x', { method: 'DELETE', headers: { a: '1' } }));
      expect([wrapped.method, wrapped.url, wrapped.headers.get('a'), wrapped.body]).toEqual([
        'DELETE',
        'http://example.test/x',
        '1',
        null,
      ]);
    }
  });
});

describe('Response', () => {
  const responseClasses = [Response, LightResponse as unknown as typeof Response];

  it('reads its body as text, JSON or bytes, says ok, and refuses a status outside 200–599', async () => {
    const seen = await Promise.all(
      responseClasses.map(async (R) => {
        const json = new R('{"a":1}', {
          status: 201,
          statusText: 'Created',
          headers: { 'content-type': 'application/json' },
        });
        const bytes = new R(new Uint8Array([1, 2, 3]), { status: 404 });
        const streamed = new R(streamOf('a', 'b'));
        const clone = streamed.clone();
        return {
          json: [json.status, json.statusText, json.ok, json.headers.get('content-type'), await json.json()],
          bytes: [bytes.ok, [...new Uint8Array(await bytes.arrayBuffer())]],
          streamed: [await streamed.text(), await clone.text()],
          empty: [new R(null, { status: 204 }).body, await new R().text()],
          refused: [caught(() => new R(null, { status: 101 })), caught(() => new R(null, { status: 600 }))],
        };
      }),
    );
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[1]!.refused).toEqual(['RangeError', 'RangeError']);
  });
});

describe('installLightFetchClasses', () => {
  it('replaces the four globals on its target, FormData with one that refuses to be made', () => {
    const target = {} as typeof globalThis;
    installLightFetchClasses(target);
    expect(target.Headers).toBe(LightHeaders);
    expect(target.Request).toBe(LightRequest);
    expect(target.Response).toBe(LightResponse);
    expect(() => new target.FormData()).toThrow(/not available in the gantry CLI/);
  });
});
