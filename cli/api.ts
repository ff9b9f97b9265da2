/**
 * The CLI's connection to the server: the typed client from client/ over a fetch that retries
 * what is safe to retry and turns "cannot connect" into UnreachableError (exit 6). Idempotent
 * reads (GET) are retried on network errors and 5xx with backoff, honouring Retry-After (the
 * server answers 503 while its database is down); other requests only when the server surely
 * did not process them (connection refused, 503). Credentials go in the Authorization header
 * only and are never printed.
 */
import {
  basicAuthorization,
  createGantryClient,
  GantryApiError,
  parseJson,
  serverRoot,
  type ErrorBody,
  type GantryClient,
} from '../client/index.ts';
import type { Connection } from './config.ts';
import { formatDuration } from './duration.ts';
import { UnreachableError } from './exit-codes.ts';
import { httpFetch } from './http-fetch.ts';

export interface Api {
  /** Retrying client for every JSON call. */
  client: GantryClient;
  /** Client without retries, for request bodies that are streams (a retry cannot replay them). */
  streamingClient: GantryClient;
  /** Plain fetch with the same credentials, retries and --verbose tracing, for paths the generated client does not type yet. */
  fetch: typeof globalThis.fetch;
  /** Fetch without credentials or retries: signed upload URLs carry their own authorization. */
  fetchUnauthenticated: typeof globalThis.fetch;
  /** The server's root URL (no trailing /api). */
  root: string;
  authorization: string;
}

export interface ApiHooks {
  /** Told about each retry (stderr). */
  onRetry?: (message: string) => void;
  /** --verbose: one line per request. */
  trace?: (line: string) => void;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * The GantryApiError a non-2xx answer read outside the generated client stands for; its body is
 * the API's error JSON, else `fallback` makes one from the text (a blob store's XML).
 */
export async function errorOfResponse(
  response: Response,
  fallback: (text: string) => ErrorBody | null = () => null,
): Promise<GantryApiError> {
  const text = await response.text().catch(() => '');
  let body: ErrorBody | null;
  try {
    const parsed = parseJson<unknown>(text);
    body = parsed !== null && typeof parsed === 'object' && 'errorcode' in parsed ? (parsed as ErrorBody) : null;
  } catch {
    body = fallback(text);
  }
  return new GantryApiError(response.status, body);
}

const RETRY_STATUSES = new Set([500, 502, 503, 504]);
const BACKOFF_MS = [250, 500, 1000, 2000, 4000];

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The low-level reason fetch failed (TypeError('fetch failed', { cause }), as undici wraps it). */
function causeOf(error: unknown): { code: string | undefined; message: string } {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown } | null)?.code;
  return {
    code: typeof code === 'string' ? code : undefined,
    message: cause instanceof Error ? cause.message : String(cause),
  };
}

function retryAfterMs(response: Response): number | null {
  const header = response.headers.get('retry-after');
  if (!header) return null;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? null : Math.max(0, date - Date.now());
}

export function retryingFetch(
  base: typeof globalThis.fetch,
  budgetMs: number,
  hooks: ApiHooks,
  retry: boolean,
): typeof globalThis.fetch {
  const sleep = hooks.sleep ?? delay;
  return async (input, init) => {
    const request = new Request(input, init);
    const idempotent = request.method === 'GET' || request.method === 'HEAD';
    const path = new URL(request.url).pathname;
    const deadline = Date.now() + budgetMs;
    for (let attempt = 0; ; attempt++) {
      const started = Date.now();
      const wait = (suggested: number | null) =>
        Math.min(
          suggested ?? BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!,
          Math.max(0, deadline - Date.now()),
        );
      let response: Response;
      try {
        response = await base(retry ? request.clone() : request);
      } catch (error) {
        if (request.signal.aborted) throw error;
        const cause = causeOf(error);
        hooks.trace?.(`${request.method} ${path} → ${cause.code ?? cause.message}`);
        // Connection refused: the request never reached the server, so even a POST may be sent again.
        const canRetry = retry && (idempotent || cause.code === 'ECONNREFUSED') && Date.now() < deadline;
        if (!canRetry)
          throw new UnreachableError(
            `Cannot reach ${new URL(request.url).origin}: ${cause.code ?? cause.message}${attempt > 0 ? ` (after ${attempt + 1} attempts)` : ''}`,
          );
        const ms = wait(null);
        hooks.onRetry?.(`Cannot reach the server (${cause.code ?? cause.message}); retrying in ${formatDuration(ms)}`);
        await sleep(ms);
        continue;
      }
      hooks.trace?.(`${request.method} ${path} → ${response.status} (${Date.now() - started} ms)`);
      // 503 means "not processed" (the server's database is down): safe to send again whatever the method.
      const canRetry =
        retry &&
        RETRY_STATUSES.has(response.status) &&
        (idempotent || response.status === 503) &&
        Date.now() < deadline;
      if (!canRetry) return response;
      const ms = wait(retryAfterMs(response));
      await response.body?.cancel();
      hooks.onRetry?.(`The server answered ${response.status}; retrying in ${formatDuration(ms)}`);
      await sleep(ms);
    }
  };
}

export function createApi(connection: Connection, hooks: ApiHooks = {}): Api {
  const authorization = basicAuthorization(connection.accountId, connection.apiKey);
  const root = serverRoot(connection.baseUrl);
  const retrying = retryingFetch(httpFetch, connection.retryBudgetMs, hooks, true);
  const once = retryingFetch(httpFetch, 0, hooks, false);
  const credentials = { accountId: connection.accountId, apiKey: connection.apiKey };
  return {
    client: createGantryClient({ baseUrl: root, credentials, fetch: retrying }),
    streamingClient: createGantryClient({ baseUrl: root, credentials, fetch: once }),
    fetch: (input, init) => {
      const request = new Request(input, init);
      request.headers.set('authorization', authorization);
      return retrying(request);
    },
    fetchUnauthenticated: once,
    root,
    authorization,
  };
}
