import type { Db } from './db.ts';

export interface Workspace {
  id: string;
  organizationId: string;
  name: string;
  packageStoreRegion: string | null;
}

interface WorkspaceRow {
  id: string;
  organization_id: string;
  name: string;
  package_store_region: string | null;
  deleted_at: Date | null;
}

function toWorkspace(row: WorkspaceRow): Workspace {
  return {
    id: row.id,
    organizationId: row.organization_id,
    name: row.name,
    packageStoreRegion: row.package_store_region,
  };
}

export function workspacesStore(db: Db) {
  const live = () => db<WorkspaceRow>('workspaces').whereNull('deleted_at');
  return {
    /** A non-deleted workspace, or null. */
    async get(id: string): Promise<Workspace | null> {
      const row = await live().where({ id }).first();
      return row ? toWorkspace(row) : null;
    },
    async list(organizationId: string, onlyId: string | null): Promise<Workspace[]> {
      const query = live().where({ organization_id: organizationId }).orderBy('name');
      if (onlyId) query.where({ id: onlyId });
      return (await query).map(toWorkspace);
    },
    async findByName(organizationId: string, name: string): Promise<Workspace | null> {
      const row = await live()
        .where({ organization_id: organizationId })
        .whereRaw('lower(name) = lower(?)', [name])
        .first();
      return row ? toWorkspace(row) : null;
    },
    async insert(workspace: Workspace): Promise<void> {
      await db('workspaces').insert({
        id: workspace.id,
        organization_id: workspace.organizationId,
        name: workspace.name,
        package_store_region: workspace.packageStoreRegion,
      });
    },
    async update(id: string, patch: Partial<Pick<Workspace, 'name' | 'packageStoreRegion'>>): Promise<void> {
      const row: Partial<WorkspaceRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.packageStoreRegion !== undefined) row.package_store_region = patch.packageStoreRegion;
      if (Object.keys(row).length > 0) await live().where({ id }).update(row);
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
    },
  };
}
