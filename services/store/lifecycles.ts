import type { Db } from './db.ts';

export interface Lifecycle {
  id: string;
  workspaceId: string;
  name: string;
  description: string | null;
}

interface LifecycleRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string | null;
}

function toLifecycle(row: LifecycleRow): Lifecycle {
  return { id: row.id, workspaceId: row.workspace_id, name: row.name, description: row.description };
}

export function lifecyclesStore(db: Db) {
  return {
    async get(id: string): Promise<Lifecycle | null> {
      const row = await db<LifecycleRow>('lifecycles').where({ id }).first();
      return row ? toLifecycle(row) : null;
    },
  };
}
