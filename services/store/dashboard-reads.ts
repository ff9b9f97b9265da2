/**
 * The dashboard's aggregate reads (issue #11): one page view, one request, and no query that
 * grows with projects × environments × deployments. The latest deployment of each cell is one
 * probe of an index (deployments_latest_per_cell / _per_release_environment) per cell of the page,
 * through LATERAL joins over the page's IDs (bounded by the page size).
 */
import type { Page, Paged, SnapshotLifecycle } from '../core/index.ts';
import type { Db } from './db.ts';
import type { DeploymentStatus } from '../core/index.ts';
import { pageOf } from './paging.ts';

/** What a matrix cell shows of the latest deployment there. */
export interface CellDeployment {
  /** The project (overview) or release (project page) the cell belongs to. */
  rowId: string;
  environmentId: string;
  deploymentId: string;
  releaseId: string;
  version: string;
  status: DeploymentStatus;
  automatic: boolean;
  requestedByName: string | null;
  createdUtc: Date;
  completedUtc: Date | null;
  scheduledFor: Date | null;
  cancellationRequestedUtc: Date | null;
  /** Why a gated Queued deployment waits (approval, freeze), as the engine last found it. */
  waitingReason: string | null;
}

interface CellRow {
  row_id: string;
  environment_id: string;
  id: string;
  release_id: string;
  version: string;
  status: DeploymentStatus;
  automatic: boolean;
  requested_by_name: string | null;
  created_at: Date;
  completed_at: Date | null;
  scheduled_for: Date | null;
  cancellation_requested_at: Date | null;
  waiting_reason: string | null;
}

const toCell = (row: CellRow): CellDeployment => ({
  rowId: row.row_id,
  environmentId: row.environment_id,
  deploymentId: row.id,
  releaseId: row.release_id,
  version: row.version,
  status: row.status,
  automatic: row.automatic,
  requestedByName: row.requested_by_name,
  createdUtc: row.created_at,
  completedUtc: row.completed_at,
  scheduledFor: row.scheduled_for,
  cancellationRequestedUtc: row.cancellation_requested_at,
  waitingReason: row.waiting_reason,
});

/** A release as the project page lists it: the lifecycle of its snapshot, not the whole snapshot. */
export interface ReleaseRow {
  id: string;
  version: string;
  channelName: string | null;
  notes: string | null;
  createdUtc: Date;
  lifecycle: SnapshotLifecycle | null;
}

/**
 * Latest deployment per (row, environment): `rowColumn` is project_id or release_id. Parameters:
 * the row IDs and the environment IDs of the page (both bounded by it).
 */
const latestPerCell = (rowColumn: 'project_id' | 'release_id') => `
SELECT x.row_id, e.environment_id, d.id, d.release_id, r.version, d.status, d.automatic, d.requested_by_name,
       d.created_at, d.completed_at, d.scheduled_for, d.cancellation_requested_at, d.waiting_reason
FROM unnest(CAST(? AS text[])) AS x(row_id)
CROSS JOIN unnest(CAST(? AS text[])) AS e(environment_id)
CROSS JOIN LATERAL (
  SELECT * FROM deployments d
  WHERE d.${rowColumn} = x.row_id AND d.environment_id = e.environment_id
  ORDER BY d.created_at DESC, d.id DESC
  LIMIT 1
) d
JOIN releases r ON r.id = d.release_id`;

export function dashboardReadsStore(db: Db) {
  return {
    /** The latest deployment of each project × environment cell that has one. */
    async latestByProject(projectIds: readonly string[], environmentIds: readonly string[]): Promise<CellDeployment[]> {
      if (projectIds.length === 0 || environmentIds.length === 0) return [];
      // Named (prepared): planning it cost about a quarter of running it for a page of 50 projects.
      const result = await db
        .raw<{ rows: CellRow[] }>(latestPerCell('project_id'), [[...projectIds], [...environmentIds]])
        .options({ name: 'gantry_dashboard_latest_by_project' });
      return result.rows.map(toCell);
    },
    /** The latest deployment of each release × environment pair that has one. */
    async latestByRelease(releaseIds: readonly string[], environmentIds: readonly string[]): Promise<CellDeployment[]> {
      if (releaseIds.length === 0 || environmentIds.length === 0) return [];
      const result = await db
        .raw<{ rows: CellRow[] }>(latestPerCell('release_id'), [[...releaseIds], [...environmentIds]])
        .options({ name: 'gantry_dashboard_latest_by_release' });
      return result.rows.map(toCell);
    },
    /**
     * The running deployment (if any) of each project × environment pair given — what an
     * AwaitingSlot deployment there waits for. Pairs: the waiting cells of one page.
     */
    async runningIn(
      pairs: ReadonlyArray<{ projectId: string; environmentId: string }>,
    ): Promise<Array<{ projectId: string; environmentId: string; deploymentId: string; version: string }>> {
      if (pairs.length === 0) return [];
      const result = await db.raw<{
        rows: Array<{ project_id: string; environment_id: string; id: string; version: string }>;
      }>(
        `SELECT p.project_id, p.environment_id, d.id, r.version
         FROM unnest(CAST(? AS text[]), CAST(? AS text[])) AS p(project_id, environment_id)
         CROSS JOIN LATERAL (
           SELECT d.id, d.release_id FROM deployments d
           WHERE d.project_id = p.project_id AND d.environment_id = p.environment_id AND d.status = 'Running'
           ORDER BY d.created_at DESC LIMIT 1
         ) d
         JOIN releases r ON r.id = d.release_id`,
        [pairs.map((p) => p.projectId), pairs.map((p) => p.environmentId)],
      );
      return result.rows.map((r) => ({
        projectId: r.project_id,
        environmentId: r.environment_id,
        deploymentId: r.id,
        version: r.version,
      }));
    },
    /** Deployments running now in the organization owning the workspace, and its concurrency cap. */
    async organizationLoad(workspaceId: string): Promise<{ running: number; maxConcurrent: number }> {
      const result = await db.raw<{ rows: Array<{ running: string; max_concurrent: number }> }>(
        `SELECT (SELECT count(*) FROM deployments d JOIN workspaces w2 ON w2.id = d.workspace_id
                 WHERE w2.organization_id = w.organization_id AND d.status = 'Running') AS running,
                o.max_concurrent_deployments AS max_concurrent
         FROM workspaces w JOIN organizations o ON o.id = w.organization_id WHERE w.id = ?`,
        [workspaceId],
      );
      const row = result.rows[0];
      return { running: Number(row?.running ?? 0), maxConcurrent: row?.max_concurrent ?? 0 };
    },
    /** A project's releases newest first, `search` a substring of the version. */
    async releasesPage(projectId: string, page: Page, search?: string): Promise<Paged<ReleaseRow>> {
      const query = db('releases')
        .where({ project_id: projectId })
        .select('id', 'version', 'channel_name', 'notes', 'created_at', db.raw(`snapshot->'lifecycle' AS lifecycle`));
      if (search) query.whereRaw('strpos(lower(version), lower(?)) > 0', [search]);
      return pageOf(
        query,
        page,
        [
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        (row: {
          id: string;
          version: string;
          channel_name: string | null;
          notes: string | null;
          created_at: Date;
          lifecycle: SnapshotLifecycle | null;
        }) => ({
          id: row.id,
          version: row.version,
          channelName: row.channel_name,
          notes: row.notes,
          createdUtc: row.created_at,
          lifecycle: row.lifecycle,
        }),
      );
    },
    /** What lifecycle progression needs of the deployments of these releases (one page of them). */
    async progressOf(
      releaseIds: readonly string[],
    ): Promise<
      Array<{ releaseId: string; environmentId: string; status: string; errorCount: number; warningCount: number }>
    > {
      if (releaseIds.length === 0) return [];
      const rows: Array<{
        release_id: string;
        environment_id: string;
        status: string;
        error_count: number;
        warning_count: number;
      }> = await db('deployments')
        .whereIn('release_id', releaseIds)
        .select('release_id', 'environment_id', 'status', 'error_count', 'warning_count');
      return rows.map((r) => ({
        releaseId: r.release_id,
        environmentId: r.environment_id,
        status: r.status,
        errorCount: r.error_count,
        warningCount: r.warning_count,
      }));
    },
  };
}
