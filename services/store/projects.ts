import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface Project {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
  lifecycleId: string | null;
  createdUtc: Date;
}

export interface ProjectRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  lifecycle_id: string | null;
  created_at: Date;
  deleted_at: Date | null;
}

/** What toProject reads, as `p.…`: a prepared statement lists its columns (store/db.ts). */
const PROJECT_COLUMNS = [
  'id',
  'workspace_id',
  'name',
  'description',
  'lifecycle_id',
  'created_at',
  'deleted_at',
] as const satisfies ReadonlyArray<keyof ProjectRow>;
const PROJECT_SELECT = PROJECT_COLUMNS.map((column) => `p.${column}`);

export function toProject(row: ProjectRow): Project {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    lifecycleId: row.lifecycle_id,
    createdUtc: row.created_at,
  };
}

export function projectsStore(db: Db) {
  const live = () => db<ProjectRow>('projects').whereNull('deleted_at');
  return {
    /** A non-deleted project, or null: a deleted project is treated as not existing (spec §3). */
    async get(id: string): Promise<Project | null> {
      const row = await live().where({ id }).first();
      return row ? toProject(row) : null;
    },
    /**
     * A non-deleted project whose workspace is not deleted either, with that workspace's
     * organization: what a visibility check needs, in one read instead of the project's and then
     * its workspace's.
     */
    async getWithOrganization(
      id: string,
      /** Inside a transaction: the project's row stays locked until it ends (as lockProject). */
      options: { lock?: boolean } = {},
    ): Promise<{ resource: Project; organizationId: string } | null> {
      const query = db('projects as p')
        .join('workspaces as w', 'w.id', 'p.workspace_id')
        .whereNull('p.deleted_at')
        .whereNull('w.deleted_at')
        .where('p.id', id)
        .first(...PROJECT_SELECT, 'w.organization_id as workspace_organization_id')
        .options({ name: options.lock ? 'gantry_project_locked_v1' : 'gantry_project_v1' });
      if (options.lock) void query.forNoKeyUpdate('p');
      const row: (ProjectRow & { workspace_organization_id: string }) | undefined = await query;
      return row ? { resource: toProject(row), organizationId: row.workspace_organization_id } : null;
    },
    async findByName(workspaceId: string, name: string): Promise<Project | null> {
      const row = await live().where({ workspace_id: workspaceId }).whereRaw('lower(name) = lower(?)', [name]).first();
      return row ? toProject(row) : null;
    },
    /**
     * Lists the projects of these workspaces; `onlyIds` narrows to the projects an account's roles
     * name, `search` to names holding it (case-insensitively).
     */
    async list(
      workspaceIds: readonly string[],
      page: Page,
      onlyIds: readonly string[] | null,
      search?: string,
    ): Promise<Paged<Project>> {
      const query = live().whereIn('workspace_id', workspaceIds);
      if (onlyIds) query.whereIn('id', onlyIds);
      if (search) query.whereRaw('strpos(lower(name), lower(?)) > 0', [search]);
      return pageOf(query, page, [{ column: 'name' }, { column: 'id' }], toProject);
    },
    async insert(project: Omit<Project, 'createdUtc'>): Promise<void> {
      await db('projects').insert({
        id: project.id,
        workspace_id: project.workspaceId,
        name: project.name,
        description: project.description,
        lifecycle_id: project.lifecycleId,
      });
    },
    async update(id: string, patch: Partial<Pick<Project, 'name' | 'description' | 'lifecycleId'>>): Promise<void> {
      const row: Partial<ProjectRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.lifecycleId !== undefined) row.lifecycle_id = patch.lifecycleId;
      if (Object.keys(row).length > 0) await live().where({ id }).update(row);
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
    },
  };
}
