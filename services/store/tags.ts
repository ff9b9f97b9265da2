import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface Tag {
  id: string;
  workspaceId: string;
  name: string;
  color: string | null;
}

interface TagRow {
  id: string;
  workspace_id: string;
  name: string;
  color: string | null;
}

function toTag(row: TagRow): Tag {
  return { id: row.id, workspaceId: row.workspace_id, name: row.name, color: row.color };
}

export function tagsStore(db: Db) {
  return {
    async get(id: string): Promise<Tag | null> {
      const row = await db<TagRow>('tags').where({ id }).first();
      return row ? toTag(row) : null;
    },
    /** The tags of a workspace among `ids` (unknown or foreign ones are simply absent). */
    async getMany(workspaceId: string, ids: readonly string[]): Promise<Tag[]> {
      if (ids.length === 0) return [];
      return (await db<TagRow>('tags').where({ workspace_id: workspaceId }).whereIn('id', ids)).map(toTag);
    },
    async list(workspaceId: string, page: Page): Promise<Paged<Tag>> {
      return pageOf(db<TagRow>('tags').where({ workspace_id: workspaceId }), page, [{ column: 'name' }], toTag);
    },
    async insert(tag: Tag): Promise<void> {
      await db('tags').insert({ id: tag.id, workspace_id: tag.workspaceId, name: tag.name, color: tag.color });
    },
    async update(id: string, patch: Partial<Pick<Tag, 'name' | 'color'>>): Promise<void> {
      const row: Partial<TagRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.color !== undefined) row.color = patch.color;
      if (Object.keys(row).length > 0) await db('tags').where({ id }).update(row);
    },
    /** Names of the steps and rolling groups whose machine selection refers to the tag. */
    async usedBy(id: string): Promise<{ steps: string[]; rollingGroups: string[] }> {
      const steps = await db('project_steps as s')
        .join('projects as p', 'p.id', 's.project_id')
        .whereNull('p.deleted_at')
        .whereRaw('s.machine_tag_filter::text like ?', [`%"${id}"%`])
        .select('s.name');
      const groups = await db('rolling_groups as g')
        .join('projects as p', 'p.id', 'g.project_id')
        .whereNull('p.deleted_at')
        .whereRaw('g.machine_order_tag_ids \\? ?', [id])
        .select('g.name');
      return { steps: steps.map((r) => r.name as string), rollingGroups: groups.map((r) => r.name as string) };
    },
    /** Deletes a tag and takes it off every machine that carries it. */
    async delete(id: string): Promise<void> {
      await db.raw('update machines set tag_ids = array_remove(tag_ids, ?) where ? = any(tag_ids)', [id, id]);
      await db('tags').where({ id }).delete();
    },
  };
}
