/**
 * The typed client of Gantry's HTTP API, shared by the dashboard and the CLI. Its types are
 * generated from the server's OpenAPI document (client/schema.ts, `npm run generate:client`), so
 * a route whose schema changes breaks their type check. Nothing here imports server code.
 */
import createFetchClient, { type Client } from 'openapi-fetch';
import { parseJson } from './json.ts';
import type { components, paths } from './schema.ts';

export type { paths, components };
export { parseJson, quoteInt64Values } from './json.ts';
export { readServerSentEvents, type ServerSentEvent } from './sse.ts';

export type GantryClient = Client<paths>;
export type ErrorBody = components['schemas']['ErrorBody'];

export interface GantryClientOptions {
  /** The server's address, with or without a trailing `/api` (the vendor SDK's base URL ends in it). */
  baseUrl: string;
  /** Service-account credentials sent as HTTP Basic; omit to rely on a session cookie (the dashboard). */
  credentials?: { accountId: string; apiKey: string };
  /** Extra headers on every request (the dashboard's CSRF token). */
  headers?: Record<string, string>;
  /** The fetch to use (tests count requests through it). */
  fetch?: typeof globalThis.fetch;
}

/** `http://host:8080/api/` → `http://host:8080`: paths in schema.ts already start with /api. */
export function serverRoot(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '').replace(/\/api$/i, '');
}

export function basicAuthorization(accountId: string, apiKey: string): string {
  const bytes = new TextEncoder().encode(`${accountId}:${apiKey}`);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

/** A fetch whose JSON bodies keep int64 values exact (as decimal strings). */
export function int64SafeFetch(base: typeof globalThis.fetch = globalThis.fetch): typeof globalThis.fetch {
  return async (input, init) => {
    const response = await base(input, init);
    if (!(response.headers.get('content-type') ?? '').includes('json')) return response;
    const text = await response.text();
    const copy = new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
    Object.defineProperty(copy, 'json', { value: async () => parseJson(text) });
    return copy;
  };
}

export function createGantryClient(options: GantryClientOptions): GantryClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.credentials)
    headers.authorization = basicAuthorization(options.credentials.accountId, options.credentials.apiKey);
  return createFetchClient<paths>({
    baseUrl: serverRoot(options.baseUrl),
    headers,
    fetch: int64SafeFetch(options.fetch),
  });
}

/** An answer of the API that is not 2xx, with the spec's error body when it sent one. */
export class GantryApiError extends Error {
  readonly status: number;
  readonly errorcode: number | null;
  readonly requestid: string | null;
  readonly body: ErrorBody | null;
  constructor(status: number, body: ErrorBody | null) {
    super(body?.error ?? `HTTP ${status}`);
    this.name = 'GantryApiError';
    this.status = status;
    this.errorcode = body?.errorcode ?? null;
    this.requestid = body?.requestid ?? null;
    this.body = body;
  }
}

/** The data of an openapi-fetch answer, or a GantryApiError. */
export function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  const error = result.error;
  const body = error !== null && typeof error === 'object' && 'errorcode' in error ? (error as ErrorBody) : null;
  throw new GantryApiError(result.response.status, body);
}
