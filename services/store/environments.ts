import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface Environment {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  sortOrder: number;
  color: string | null;
  enabled: boolean;
  /** Approvals by distinct accounts a deployment to it needs before it starts (0: none). */
  requiredApprovals: number;
}

export interface EnvironmentRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  sort_order: number;
  color: string | null;
  enabled: boolean;
  required_approvals: number;
  deleted_at: Date | null;
}

export function toEnvironment(row: EnvironmentRow): Environment {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    sortOrder: row.sort_order,
    color: row.color,
    enabled: row.enabled,
    requiredApprovals: row.required_approvals,
  };
}

export function environmentsStore(db: Db) {
  const live = () => db<EnvironmentRow>('environments').whereNull('deleted_at');
  return {
    /** A non-deleted environment, or null. */
    async get(id: string): Promise<Environment | null> {
      const row = await live().where({ id }).first();
      return row ? toEnvironment(row) : null;
    },
    /** The non-deleted environments of a workspace among `ids` (missing ones are simply absent). */
    async getMany(workspaceId: string, ids: readonly string[]): Promise<Environment[]> {
      if (ids.length === 0) return [];
      return (await live().where({ workspace_id: workspaceId }).whereIn('id', ids)).map(toEnvironment);
    },
    async findByName(workspaceId: string, name: string): Promise<Environment | null> {
      const row = await live().where({ workspace_id: workspaceId }).whereRaw('lower(name) = lower(?)', [name]).first();
      return row ? toEnvironment(row) : null;
    },
    /** Every environment of a workspace in display order (no paging: callers need all of them). */
    async listAll(workspaceId: string): Promise<Environment[]> {
      return (
        await live()
          .where({ workspace_id: workspaceId })
          .orderBy([{ column: 'sort_order' }, { column: 'name' }])
      ).map(toEnvironment);
    },
    async list(workspaceId: string, page: Page): Promise<Paged<Environment>> {
      return pageOf(
        live().where({ workspace_id: workspaceId }),
        page,
        [{ column: 'sort_order' }, { column: 'name' }],
        toEnvironment,
      );
    },
    async maxSortOrder(workspaceId: string): Promise<number> {
      const [row] = await live().where({ workspace_id: workspaceId }).max({ m: 'sort_order' });
      return Number(row?.m ?? 0);
    },
    async insert(environment: Environment): Promise<void> {
      await db('environments').insert({
        id: environment.id,
        workspace_id: environment.workspaceId,
        name: environment.name,
        description: environment.description,
        sort_order: environment.sortOrder,
        color: environment.color,
        enabled: environment.enabled,
        required_approvals: environment.requiredApprovals,
      });
    },
    async update(id: string, patch: Partial<Omit<Environment, 'id' | 'workspaceId'>>): Promise<void> {
      const row: Partial<EnvironmentRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.sortOrder !== undefined) row.sort_order = patch.sortOrder;
      if (patch.color !== undefined) row.color = patch.color;
      if (patch.enabled !== undefined) row.enabled = patch.enabled;
      if (patch.requiredApprovals !== undefined) row.required_approvals = patch.requiredApprovals;
      if (Object.keys(row).length > 0) await live().where({ id }).update(row);
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
    },
  };
}
