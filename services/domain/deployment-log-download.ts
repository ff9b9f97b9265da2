/**
 * A deployment's whole log as one download (GET /api/deployment/log): what the dashboard links to
 * instead of holding a log of millions of lines in the page. Pages are read one at a time, only as
 * the consumer asks for them (the response under socket backpressure), and only up to the last
 * line stored when the download began: a deployment still printing does not keep it open.
 */
import { Capability, type Principal } from '../core/index.ts';
import type { LogEntry } from '../store/index.ts';
import { readableDeployment } from './deployment-events.ts';
import type { DomainDeps } from './deps.ts';

/** Lines per read (each page is also at most MAX_LOG_PAGE_BYTES). */
const PAGE_LINES = 5_000;

/** Checks visibility and capability (throws before anything is sent), then returns the pages. */
export async function downloadDeploymentLog(
  deps: DomainDeps,
  principal: Principal,
  deploymentId: string,
): Promise<{ deploymentId: string; pages: AsyncGenerator<LogEntry[]> }> {
  const deployment = await readableDeployment(deps, principal, deploymentId, [Capability.View, Capability.Deploy]);
  return { deploymentId: deployment.id, pages: pages(deps, deployment.id, deployment.lastLogTick) };
}

async function* pages(deps: DomainDeps, deploymentId: string, lastTick: bigint): AsyncGenerator<LogEntry[]> {
  let after: bigint | null = null;
  for (;;) {
    const page = await deps.store.deploymentLogs.readPage(deploymentId, after, PAGE_LINES);
    const lines = page.entries.filter((entry) => entry.tick <= lastTick);
    if (lines.length > 0) yield lines;
    // Every line up to lastTick was committed when the download began: `more` false means all read.
    if (lines.length < page.entries.length || !page.more) return;
    after = lines.at(-1)!.tick;
  }
}
