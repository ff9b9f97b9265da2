/** The deployment read shapes, taken from the generated client (GET /api/deployment). */
import type { paths } from '../client/index.ts';

type DeploymentRead = paths['/api/deployment']['get']['responses'][200]['content']['application/json'];

/** `status` of GET /api/deployment (api-spec §2.2); ticks are decimal strings (exact int64). */
export type DeploymentStatus = DeploymentRead['status'];
/** One item of `logs` (api-spec §2.3). */
export type LogItem = DeploymentRead['logs'][number];

export const FINAL_STATUSES: ReadonlySet<string> = new Set(['Completed', 'Failed', 'Cancelled']);
export const isFinal = (status: DeploymentStatus | null) => status !== null && FINAL_STATUSES.has(status.Status);

/** GET /api/deployment returns at most this many lines per read: a full page means "read on at once". */
export const MAX_LINES_PER_READ = 5000;
