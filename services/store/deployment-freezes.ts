/**
 * Deployment freezes (issue #15): named windows over environments (and optionally projects) of a
 * workspace during which deployments wait. A window is one span (start, end) or a recurrence
 * (a cron expression, a duration and a time zone); soft-deleted.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';
import { jsonDate } from './json-rows.ts';

export interface FreezeRecurrence {
  cron: string;
  durationMinutes: number;
  timeZone: string;
}

export interface DeploymentFreeze {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  startUtc: Date | null;
  endUtc: Date | null;
  recurrence: FreezeRecurrence | null;
  environmentIds: string[];
  /** Empty: every project. */
  projectIds: string[];
  createdUtc: Date;
}

interface FreezeRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  start_at: Date | null;
  end_at: Date | null;
  recurrence_cron: string | null;
  recurrence_duration_minutes: number | null;
  recurrence_time_zone: string | null;
  environment_ids: string[];
  project_ids: string[];
  created_at: Date;
  deleted_at: Date | null;
}

function toFreeze(row: FreezeRow): DeploymentFreeze {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    startUtc: row.start_at,
    endUtc: row.end_at,
    recurrence:
      row.recurrence_cron === null
        ? null
        : {
            cron: row.recurrence_cron,
            durationMinutes: row.recurrence_duration_minutes ?? 0,
            timeZone: row.recurrence_time_zone ?? 'UTC',
          },
    environmentIds: row.environment_ids,
    projectIds: row.project_ids,
    createdUtc: row.created_at,
  };
}

/** A freeze read as JSON (row_to_json inside another statement): timestamps come as text. */
export function freezeFromJson(row: Record<string, unknown>): DeploymentFreeze {
  return toFreeze({
    ...(row as unknown as FreezeRow),
    start_at: jsonDate(row.start_at),
    end_at: jsonDate(row.end_at),
    created_at: new Date(row.created_at as string),
    deleted_at: jsonDate(row.deleted_at),
  });
}

function toRow(f: Omit<DeploymentFreeze, 'id' | 'workspaceId' | 'createdUtc'>) {
  return {
    name: f.name,
    description: f.description,
    start_at: f.startUtc,
    end_at: f.endUtc,
    recurrence_cron: f.recurrence?.cron ?? null,
    recurrence_duration_minutes: f.recurrence?.durationMinutes ?? null,
    recurrence_time_zone: f.recurrence?.timeZone ?? null,
    environment_ids: f.environmentIds,
    project_ids: f.projectIds,
  };
}

export function deploymentFreezesStore(db: Db) {
  const live = () => db<FreezeRow>('deployment_freezes').whereNull('deleted_at');
  return {
    async get(id: string): Promise<DeploymentFreeze | null> {
      const row = await live().where({ id }).first();
      return row ? toFreeze(row) : null;
    },
    async list(workspaceId: string, page: Page): Promise<Paged<DeploymentFreeze>> {
      return pageOf(
        live().where({ workspace_id: workspaceId }),
        page,
        [{ column: 'name' }, { column: 'id' }],
        toFreeze,
      );
    },
    /** Freezes of the workspace that may hold a deployment now or later: recurring, or not over at `now`. */
    async listLive(workspaceId: string, now: Date): Promise<DeploymentFreeze[]> {
      return (
        await live()
          .where({ workspace_id: workspaceId })
          .where((q) => {
            q.whereNotNull('recurrence_cron').orWhere('end_at', '>', now);
          })
          .orderBy('name')
      ).map(toFreeze);
    },
    async insert(freeze: DeploymentFreeze): Promise<void> {
      await db('deployment_freezes').insert({
        id: freeze.id,
        workspace_id: freeze.workspaceId,
        created_at: freeze.createdUtc,
        ...toRow(freeze),
      });
    },
    async update(freeze: DeploymentFreeze): Promise<void> {
      await live().where({ id: freeze.id }).update(toRow(freeze));
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
    },
  };
}
