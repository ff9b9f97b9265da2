/**
 * This replica's caches of the two reads every API client repeats (issue #20): the principal of
 * an API key (each request) and the answer of GET /api/deployment for a finished deployment
 * (what pipelines and dashboards poll). Authorization is never cached: the caller's roles and
 * workspace are checked against the cached deployment on every request.
 *
 * Why they stay correct across replicas:
 * - Principals: accounts, keys and workspaces change only through the domain functions that call
 *   `deps.forgetCachedReads` (deleting an account, a key or a workspace; nothing edits roles), so
 *   this replica forgets everything once such a change commits. Another replica's cache keeps a
 *   revoked key working for at most READ_CACHE_MAX_AGE_MS. Only successes are cached: a new key
 *   works at once everywhere.
 * - Finished deployments: once Completed, Failed or Cancelled, nothing changes a deployment's row
 *   or lines (the last line commits with the final status; cancel and approvals refuse it). Only
 *   its workspace's deletion hides it: at once here, within READ_CACHE_MAX_AGE_MS elsewhere. Any
 *   change event of the deployment (the change hub, from every replica) drops its answers too.
 *   Deployments still running are always read from the store.
 */
import { ExpiringCache } from '../core/index.ts';
import type { Principal } from '../core/index.ts';
import type { DeploymentView } from './deployments.ts';

/** How stale a cached read may be when the change was made on another replica. */
export const READ_CACHE_MAX_AGE_MS = 5_000;
/** Finished deployments' answers with at most this many lines are kept (bounds memory: ~256 × 256 lines). */
export const CACHED_DEPLOYMENT_MAX_LINES = 256;

export interface CachedDeploymentRead {
  view: DeploymentView;
  organizationId: string;
}

export interface ReadCaches {
  /** By service-account ID and the API key's hash (never the key itself). */
  principals: ExpiringCache<Principal>;
  /** By deployment ID and the query (logs after which tick, or none). */
  deployments: ExpiringCache<CachedDeploymentRead>;
  /** Drops every cached answer of this deployment (it changed). */
  forgetDeployment(deploymentId: string): void;
  /** Drops everything (an account, a key or a workspace was deleted). */
  clear(): void;
}

/** The key of a principal: the account and the hash of the key it sent (never the key itself). */
export const principalKey = (serviceAccountId: string, keyHash: string) => `${serviceAccountId}:${keyHash}`;

const deploymentReadKeyPrefix = (deploymentId: string) => `${deploymentId}:`;
/** The key of a deployment read: the deployment and what of its log was asked for. */
export const deploymentReadKey = (deploymentId: string, logsAfter: bigint | null, skipLogs: boolean) =>
  `${deploymentReadKeyPrefix(deploymentId)}${skipLogs ? 'none' : (logsAfter ?? '').toString()}`;

export function createReadCaches(options: { maxAgeMs?: number } = {}): ReadCaches {
  const maxAgeMs = options.maxAgeMs ?? READ_CACHE_MAX_AGE_MS;
  // A key's principal is the same for every request: concurrent misses share one read.
  const principals = new ExpiringCache<Principal>({ capacity: 10_000, maxAgeMs, shareLoads: true });
  // Not shared: a request must not be answered by a read that started before it (a poller that
  // just saw the deployment change elsewhere would be shown the state before).
  const deployments = new ExpiringCache<CachedDeploymentRead>({ capacity: 256, maxAgeMs });
  return {
    principals,
    deployments,
    forgetDeployment: (deploymentId) => deployments.forgetPrefix(deploymentReadKeyPrefix(deploymentId)),
    clear() {
      principals.clear();
      deployments.clear();
    },
  };
}
