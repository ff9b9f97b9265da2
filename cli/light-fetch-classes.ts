/**
 * Headers, Request and Response for the CLI's process, without undici. Node 20 defines these
 * globals (and FormData) as getters that load its whole undici bundle on first use: 19–27 ms of a
 * CLI process's ~80 ms start on this project's VM, paid by every command (the CLI talks to the
 * server over node:http: cli/http-fetch.ts). Installed first thing by cli/gantry.ts, they cover
 * what the CLI and its generated client (openapi-fetch) use: headers matched without case, bodies
 * given as text, bytes, URLSearchParams or a stream and read once as text, JSON, bytes or a stream,
 * clone() (a stream body is teed), abort signals. FormData, which the CLI never sends (openapi-fetch
 * only asks whether a body is one), refuses to be made. Everything else is the platform's.
 */

const NORMALIZED_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
const encoder = new TextEncoder();

type HeadersInitLike = Headers | Iterable<readonly [string, string]> | Record<string, string>;

class LightHeaders {
  readonly #values = new Map<string, string[]>();

  constructor(init?: HeadersInitLike) {
    if (init === undefined || init === null) return;
    if (init instanceof LightHeaders) init.forEach((value, name) => this.append(name, value));
    else if (Symbol.iterator in Object(init))
      for (const pair of init as Iterable<readonly [string, string]>) {
        if (pair.length !== 2) throw new TypeError('Headers: each pair must be [name, value]');
        this.append(pair[0], pair[1]);
      }
    else for (const [name, value] of Object.entries(init as Record<string, string>)) this.append(name, value);
  }

  append(name: string, value: string): void {
    const key = headerName(name);
    const list = this.#values.get(key);
    if (list) list.push(headerValue(value));
    else this.#values.set(key, [headerValue(value)]);
  }
  set(name: string, value: string): void {
    this.#values.set(headerName(name), [headerValue(value)]);
  }
  delete(name: string): void {
    this.#values.delete(headerName(name));
  }
  has(name: string): boolean {
    return this.#values.has(headerName(name));
  }
  get(name: string): string | null {
    return this.#values.get(headerName(name))?.join(', ') ?? null;
  }
  getSetCookie(): string[] {
    return [...(this.#values.get('set-cookie') ?? [])];
  }
  forEach(callback: (value: string, name: string, headers: LightHeaders) => void, thisArg?: unknown): void {
    for (const [name, value] of this.entries()) callback.call(thisArg, value, name, this);
  }
  *entries(): IterableIterator<[string, string]> {
    // As the platform's: sorted by name, a name's values joined (Set-Cookie's each on its own).
    for (const name of [...this.#values.keys()].sort()) {
      const values = this.#values.get(name)!;
      if (name === 'set-cookie') for (const value of values) yield [name, value];
      else yield [name, values.join(', ')];
    }
  }
  *keys(): IterableIterator<string> {
    for (const [name] of this.entries()) yield name;
  }
  *values(): IterableIterator<string> {
    for (const [, value] of this.entries()) yield value;
  }
  [Symbol.iterator](): IterableIterator<[string, string]> {
    return this.entries();
  }
}

function headerName(name: string): string {
  const key = String(name).toLowerCase();
  if (!/^[!#$%&'*+\-.^_`|~0-9a-z]+$/.test(key)) throw new TypeError(`Headers: invalid header name "${name}"`);
  return key;
}

function headerValue(value: string): string {
  const text = String(value).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (/[\0\r\n]/.test(text)) throw new TypeError('Headers: invalid header value');
  return text;
}

type BodyInitLike = string | ArrayBuffer | ArrayBufferView | URLSearchParams | ReadableStream<Uint8Array> | null;

/** A body as given, and read at most once (a stream) or any number of times by clones. */
class Body {
  #source: Uint8Array | ReadableStream<Uint8Array> | null;
  #stream: ReadableStream<Uint8Array> | null = null;
  #used = false;

  constructor(init: BodyInitLike | undefined, headers: LightHeaders) {
    if (init === undefined || init === null) this.#source = null;
    else if (typeof init === 'string') {
      this.#source = encoder.encode(init);
      if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    } else if (init instanceof URLSearchParams) {
      this.#source = encoder.encode(init.toString());
      if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    } else if (init instanceof ArrayBuffer) this.#source = new Uint8Array(init.slice(0));
    else if (ArrayBuffer.isView(init))
      this.#source = new Uint8Array(init.buffer.slice(init.byteOffset, init.byteOffset + init.byteLength));
    else if (init instanceof ReadableStream) this.#source = init;
    else throw new TypeError('This body type is not supported by the gantry CLI');
  }

  get used(): boolean {
    return this.#used;
  }
  get stream(): ReadableStream<Uint8Array> | null {
    if (this.#source === null) return null;
    if (!this.#stream) {
      const source = this.#source;
      this.#stream =
        source instanceof ReadableStream
          ? source
          : new ReadableStream<Uint8Array>({
              start(controller) {
                controller.enqueue(source);
                controller.close();
              },
            });
    }
    return this.#stream;
  }

  async bytes(): Promise<Uint8Array> {
    if (this.#used) throw new TypeError('Body is unusable: it has already been read');
    this.#used = true;
    const source = this.#source;
    if (source === null) return new Uint8Array(0);
    if (!(source instanceof ReadableStream) && !this.#stream) return source;
    const chunks: Uint8Array[] = [];
    const reader = this.stream!.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(next.value);
    return Buffer.concat(chunks);
  }

  /** Another body with the same bytes: a stream is teed, this one keeping one branch. */
  copy(headers: LightHeaders): Body {
    if (this.#used) throw new TypeError('Body is unusable: it has already been read');
    const stream = this.#source instanceof ReadableStream || this.#stream ? this.stream : null;
    if (stream) {
      const [mine, theirs] = stream.tee();
      this.#source = mine;
      this.#stream = mine;
      return new Body(theirs, headers);
    }
    const copy = new Body(null, headers);
    copy.#source = this.#source;
    return copy;
  }
}

/** What Request and Response share: their headers and body, and the ways to read it. */
abstract class WithBody {
  readonly headers: LightHeaders;
  protected body_: Body;

  constructor(headers: LightHeaders, body: Body) {
    this.headers = headers;
    this.body_ = body;
  }
  get body(): ReadableStream<Uint8Array> | null {
    return this.body_.stream;
  }
  get bodyUsed(): boolean {
    return this.body_.used;
  }
  async arrayBuffer(): Promise<ArrayBuffer> {
    const bytes = await this.body_.bytes();
    return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  }
  async bytes(): Promise<Uint8Array> {
    return new Uint8Array(await this.arrayBuffer());
  }
  async text(): Promise<string> {
    return new TextDecoder().decode(await this.body_.bytes());
  }
  async json(): Promise<unknown> {
    return JSON.parse(await this.text()) as unknown;
  }
}

interface RequestInitLike {
  method?: string;
  headers?: HeadersInitLike;
  body?: BodyInitLike;
  signal?: AbortSignal | null;
  [other: string]: unknown;
}

class LightRequest extends WithBody {
  readonly url: string;
  readonly method: string;
  readonly signal: AbortSignal;

  constructor(input: string | URL | LightRequest, init: RequestInitLike = {}) {
    const from = input instanceof LightRequest ? input : null;
    const url = from ? from.url : new URL(input as string | URL).href;
    const given = init.method ?? from?.method ?? 'GET';
    const method = NORMALIZED_METHODS.has(given.toUpperCase()) ? given.toUpperCase() : given;
    const headers = new LightHeaders(init.headers ?? from?.headers);
    const hasBody = init.body !== undefined && init.body !== null;
    if (hasBody && (method === 'GET' || method === 'HEAD'))
      throw new TypeError('Request with GET/HEAD method cannot have body');
    // A body taken over from another request moves with it (the platform marks that one used).
    super(headers, hasBody || !from ? new Body(init.body, headers) : from.body_);
    this.url = url;
    this.method = method;
    this.signal = init.signal ?? from?.signal ?? new AbortController().signal;
  }

  clone(): LightRequest {
    const copy = new LightRequest(this.url, { method: this.method, headers: this.headers, signal: this.signal });
    copy.body_ = this.body_.copy(copy.headers);
    return copy;
  }
}

interface ResponseInitLike {
  status?: number;
  statusText?: string;
  headers?: HeadersInitLike;
}

class LightResponse extends WithBody {
  readonly status: number;
  readonly statusText: string;
  readonly type = 'default';
  readonly url = '';
  readonly redirected = false;

  constructor(body: BodyInitLike = null, init: ResponseInitLike = {}) {
    const status = init.status ?? 200;
    if (!Number.isInteger(status) || status < 200 || status > 599)
      throw new RangeError(`init["status"] must be in the range of 200 to 599, inclusive.`);
    const headers = new LightHeaders(init.headers);
    super(headers, new Body(body, headers));
    this.status = status;
    this.statusText = init.statusText ?? '';
  }

  get ok(): boolean {
    return this.status >= 200 && this.status <= 299;
  }

  clone(): LightResponse {
    const copy = new LightResponse(null, { status: this.status, statusText: this.statusText, headers: this.headers });
    copy.body_ = this.body_.copy(copy.headers);
    return copy;
  }
}

class RefusedFormData {
  constructor() {
    throw new TypeError('FormData is not available in the gantry CLI');
  }
}

/** Sets the four globals; reading Node's own would load undici, so they are replaced unread. */
export function installLightFetchClasses(target: typeof globalThis = globalThis): void {
  for (const [name, value] of Object.entries({
    Headers: LightHeaders,
    Request: LightRequest,
    Response: LightResponse,
    FormData: RefusedFormData,
  }))
    Object.defineProperty(target, name, { value, writable: true, configurable: true, enumerable: false });
}

export { LightHeaders, LightRequest, LightResponse };
