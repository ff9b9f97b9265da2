/**
 * Follows one deployment until it is final: its status changes and every log line, in order,
 * each once. Uses the server's event stream (GET /api/deployment/events, text/event-stream)
 * and, when the server has none (404), polls GET /api/deployment with getLogsAfter=<last tick>
 * on a short ramp up to every 250 ms (the vendor SDK polls every 3 s). The final status comes
 * only after every line is readable, so "read until final" has every line.
 */
import { parseJson, readServerSentEvents, unwrap } from '../client/index.ts';
import { errorOfResponse, type Api } from './api.ts';
import { isFinal, MAX_LINES_PER_READ, type DeploymentStatus, type LogItem } from './deployment-types.ts';
import { UnreachableError } from './exit-codes.ts';

/** What the stream's `deployment` event (or the polled read) says the deployment is. */
export interface DeploymentIdentity {
  environmentName: string;
}

export interface FollowHandlers {
  /** Once, before the first status: where it deploys (a server without the event leaves it unsaid). */
  onDeployment?(deployment: DeploymentIdentity): void;
  onStatus(status: DeploymentStatus): void;
  onLogs(items: LogItem[]): void;
}

export interface FollowOptions extends FollowHandlers {
  signal?: AbortSignal;
  /** Resume after this tick (lines up to it were seen). */
  afterTick?: string | null;
  /** How long a broken event stream is retried before giving up (the retry budget). */
  reconnectBudgetMs: number;
}

/**
 * Waits before each read: quick at first (a no-op deployment ends ~50 ms after it was created),
 * then every 250 ms. The first read waits too: right after a deploy there is nothing to show yet,
 * and a read then would only cost a request.
 */
const POLL_RAMP_MS = [50, 50, 100, 150, 200, 250];

/** Servers without the event stream, remembered for the rest of this process. */
const noEventStream = new Set<string>();

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Follows the deployment; resolves with its final status. Rejects with the signal's reason when aborted. */
export async function followDeployment(
  api: Api,
  deploymentId: string,
  options: FollowOptions,
): Promise<DeploymentStatus> {
  const state = { afterTick: options.afterTick ?? null };
  if (!noEventStream.has(api.root)) {
    const final = await followEvents(api, deploymentId, state, options);
    if (final) return final;
    noEventStream.add(api.root);
  }
  return poll(api, deploymentId, state, options);
}

/** Reads the event stream, reconnecting with Last-Event-ID; null when the server has no such endpoint. */
async function followEvents(
  api: Api,
  deploymentId: string,
  state: { afterTick: string | null },
  options: FollowOptions,
): Promise<DeploymentStatus | null> {
  let brokenSince: number | null = null;
  for (let attempt = 0; ; attempt++) {
    // Appended, not resolved: a server behind a path prefix (https://host/gantry) keeps it.
    const url = new URL(`${api.root}/api/deployment/events`);
    url.searchParams.set('deploymentId', deploymentId);
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (state.afterTick !== null) headers['last-event-id'] = state.afterTick;
    let response: Response;
    try {
      response = await api.fetch(url, { headers, signal: options.signal ?? null });
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason as Error;
      throw error;
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return null;
    }
    if (!response.ok || !response.body) throw await errorOfResponse(response);
    let ended: DeploymentStatus | null = null;
    try {
      for await (const event of readServerSentEvents(response.body)) {
        brokenSince = null;
        if (event.event === 'logs') {
          const items = parseJson<LogItem[]>(event.data);
          if (items.length > 0) options.onLogs(items);
          state.afterTick = event.id ?? items.at(-1)?.CreatedUtcTick ?? state.afterTick;
        } else if (event.event === 'deployment') {
          options.onDeployment?.(parseJson<DeploymentIdentity>(event.data));
        } else if (event.event === 'status' || event.event === 'end') {
          const status = parseJson<DeploymentStatus>(event.data);
          options.onStatus(status);
          // 'end' comes after the final status and every line: the stream has nothing more.
          if (event.event === 'end') {
            ended = status;
            break;
          }
        }
      }
    } catch {
      if (options.signal?.aborted) throw options.signal.reason as Error;
      // A dropped connection mid-stream: reconnect below, resuming after the last tick.
    }
    if (ended) {
      // Out of the loop, the reader's lock is released, so the stream can be closed (a locked
      // stream refuses cancel()).
      await response.body.cancel().catch(() => undefined);
      return ended;
    }
    brokenSince ??= Date.now();
    if (Date.now() - brokenSince > options.reconnectBudgetMs)
      throw new UnreachableError(`The event stream of deployment ${deploymentId} kept breaking off`);
    await abortableSleep(Math.min(250 * 2 ** Math.min(attempt, 4), 4000), options.signal);
  }
}

async function poll(
  api: Api,
  deploymentId: string,
  state: { afterTick: string | null },
  options: FollowOptions,
): Promise<DeploymentStatus> {
  let lastStatus: string | null = null;
  let more = false;
  for (let round = 0; ; round++) {
    if (!more) await abortableSleep(POLL_RAMP_MS[Math.min(round, POLL_RAMP_MS.length - 1)]!, options.signal);
    const query: { deploymentId: string; getLogsAfter?: string } = { deploymentId };
    if (state.afterTick !== null) query.getLogsAfter = state.afterTick;
    const read = unwrap(await api.client.GET('/api/deployment', { params: { query }, signal: options.signal ?? null }));
    if (round === 0) options.onDeployment?.({ environmentName: read.environmentName });
    if (read.logs.length > 0) {
      options.onLogs(read.logs);
      state.afterTick = read.logs.at(-1)!.CreatedUtcTick;
    }
    const key = JSON.stringify(read.status);
    if (key !== lastStatus) {
      lastStatus = key;
      options.onStatus(read.status);
    }
    // A page is cut by count or by bytes (about 1 MiB): once final, read until a page is empty.
    more = read.logs.length >= MAX_LINES_PER_READ || (isFinal(read.status) && read.logs.length > 0);
    if (isFinal(read.status) && !more) return read.status;
  }
}
