/**
 * Following a deployment (GET /api/deployment/events, issue #11): its status, then its log lines
 * in tick order, then a new status whenever it changes, and the end once it is final — each read
 * from the store, so a follower reconnecting to another replica misses nothing. Wake-ups from the
 * bus (deps.deploymentChanges) make it prompt; a slow timer makes a lost wake-up cheap.
 *
 * Bounded: lines are read a page at a time, and the generator only reads the next page when its
 * consumer (the HTTP response, under socket backpressure) asks for the next event.
 */
import {
  authorize,
  Capability,
  parseTicks,
  unknownId,
  type LogLevelFloor,
  type Principal,
  FINAL_STATUSES,
} from '../core/index.ts';
import { MAX_LOG_PAGE_BYTES, type Deployment, type LogEntry } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { canSeeWorkspace } from './scope.ts';

export type DeploymentEvent =
  /** First, when the follower asked for the log's tail: how many lines come before the first one it is sent. */
  | { type: 'tail'; earlierLines: number }
  | { type: 'status'; deployment: Deployment }
  | { type: 'logs'; lines: LogEntry[] }
  | { type: 'end'; deployment: Deployment }
  | { type: 'keepalive' };

export interface FollowOptions {
  /** Re-read this often without a wake-up (default 2 s). */
  pollMs?: number;
  /** A keepalive after this long without output (default 15 s). */
  keepaliveMs?: number;
  /** Lines per read, and so per `logs` event (default 1 000). */
  pageSize?: number;
}

const FINAL: ReadonlySet<string> = new Set(FINAL_STATUSES);

/** What a follower is shown as "the status": fields that move with every line do not count as a change. */
function statusKey(d: Deployment): string {
  return [
    d.status,
    d.errorCount,
    d.warningCount,
    d.cancellationRequestedUtc?.toISOString(),
    d.lastAttemptUtc?.toISOString(),
    d.completedUtc?.toISOString(),
  ].join('|');
}

/**
 * A deployment the principal may see (else 400, as if it did not exist) and read with one of
 * `capabilities` for its project and environment (else 401/2003): one read with its organization.
 */
export async function readableDeployment(
  deps: DomainDeps,
  principal: Principal,
  deploymentId: string,
  capabilities: Capability | readonly Capability[],
): Promise<Deployment> {
  const found = await deps.store.deployments.getWithOrganization(deploymentId);
  if (!found || !canSeeWorkspace(principal, { id: found.deployment.workspaceId, organizationId: found.organizationId }))
    throw unknownId('deploymentId');
  authorize(principal, capabilities, {
    projectId: found.deployment.projectId,
    environmentIds: [found.deployment.environmentId],
  });
  return found.deployment;
}

/**
 * Checks visibility and capability (throws before anything is streamed) and returns the events.
 * `signal` ends the stream early (the client went away).
 */
export async function followDeployment(
  deps: DomainDeps,
  principal: Principal,
  /**
   * `after`: lines strictly after this tick (a resumed stream). Else `tail`: only the last `tail`
   * lines, or a few more (a page of the dashboard for a log of millions). Else every line.
   * `level`: only the lines of that level and above (and `tail` counts those).
   */
  query: {
    deploymentId: string;
    after?: string | undefined;
    tail?: number | undefined;
    level?: LogLevelFloor | undefined;
  },
  signal: AbortSignal,
  options: FollowOptions = {},
): Promise<AsyncGenerator<DeploymentEvent>> {
  const resumeAfter = parseTicks(query.after, 'after');
  const deployment = await readableDeployment(deps, principal, query.deploymentId, [
    Capability.View,
    Capability.Deploy,
  ]);
  const floor = query.level ?? null;
  const tail =
    resumeAfter === null && query.tail !== undefined
      ? await deps.store.deploymentLogs.tailStart(deployment.id, query.tail, floor)
      : null;
  const after = resumeAfter ?? tail?.afterTick ?? 0n;
  return events(deps, deployment, after, floor, tail?.earlierLines ?? null, signal, {
    pollMs: options.pollMs ?? 2_000,
    keepaliveMs: options.keepaliveMs ?? 15_000,
    pageSize: options.pageSize ?? 1_000,
  });
}

async function* events(
  deps: DomainDeps,
  first: Deployment,
  after: bigint,
  floor: LogLevelFloor | null,
  earlierLines: number | null,
  signal: AbortSignal,
  options: Required<FollowOptions>,
): AsyncGenerator<DeploymentEvent> {
  let woken = false;
  let wake: (() => void) | null = null;
  const onChange = () => {
    woken = true;
    wake?.();
  };
  // Subscribed before the first read: a change committed after that read still wakes us.
  const unsubscribe = deps.deploymentChanges?.subscribe(first.id, onChange) ?? (() => undefined);
  signal.addEventListener('abort', onChange);
  try {
    if (earlierLines !== null) yield { type: 'tail', earlierLines };
    let lastTick = after;
    let shownStatus = '';
    let lastOutput = performance.now();
    for (;;) {
      // Cleared before the read, not after it: a change that commits while the read is in flight
      // may be newer than what the read saw, so its wake-up must still count.
      woken = false;
      // Status and the next lines in one statement (one instant), read after subscribing: the
      // status read to authorize (`first`) may predate the subscription. A woken follower is on
      // the path of every live line (script → SSE client), and reads at every change.
      const next = await deps.store.deploymentLogs.readWithDeployment(
        first.id,
        lastTick,
        options.pageSize,
        MAX_LOG_PAGE_BYTES,
        floor,
      );
      // Deleted since (its project was deleted): the follower is told it is unknown.
      if (!next) throw unknownId('deploymentId');
      const deployment = next.deployment;
      if (statusKey(deployment) !== shownStatus) {
        shownStatus = statusKey(deployment);
        yield { type: 'status', deployment };
        lastOutput = performance.now();
      }
      // The final status commits with the last line: lines read with or after a final status
      // are all of them.
      // With a level, a page may hold none of its lines yet still have been read through some.
      let page = next.page;
      while (page.through !== null && page.through > lastTick) {
        if (signal.aborted) return;
        lastTick = page.through;
        if (page.entries.length > 0) {
          yield { type: 'logs', lines: page.entries };
          lastOutput = performance.now();
        }
        if (!page.more) break;
        page = await deps.store.deploymentLogs.readPage(
          first.id,
          lastTick,
          options.pageSize,
          MAX_LOG_PAGE_BYTES,
          floor,
        );
      }
      if (FINAL.has(deployment.status)) {
        yield { type: 'end', deployment };
        return;
      }
      if (!woken) {
        const waitMs = Math.min(options.pollMs, Math.max(0, options.keepaliveMs - (performance.now() - lastOutput)));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
          if (signal.aborted) wake();
        });
        wake = null;
      }
      if (signal.aborted) return;
      if (performance.now() - lastOutput >= options.keepaliveMs) {
        yield { type: 'keepalive' };
        lastOutput = performance.now();
      }
    }
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', onChange);
  }
}
