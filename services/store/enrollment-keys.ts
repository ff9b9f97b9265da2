/** Enrollment keys (hash only) and the machines they enroll. */
import type { Db } from './db.ts';

export interface EnrollmentKey {
  id: string;
  workspaceId: string;
  name: string;
  environmentIds: string[];
  tagIds: string[];
  createdUtc: Date;
  expiresUtc: Date | null;
  revokedUtc: Date | null;
  lastUsedUtc: Date | null;
  useCount: number;
}

interface EnrollmentKeyRow {
  id: string;
  workspace_id: string;
  name: string;
  key_hash: string;
  environment_ids: string[];
  tag_ids: string[];
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  use_count: number;
}

const toKey = (row: EnrollmentKeyRow): EnrollmentKey => ({
  id: row.id,
  workspaceId: row.workspace_id,
  name: row.name,
  environmentIds: row.environment_ids,
  tagIds: row.tag_ids,
  createdUtc: row.created_at,
  expiresUtc: row.expires_at,
  revokedUtc: row.revoked_at,
  lastUsedUtc: row.last_used_at,
  useCount: row.use_count,
});

/** A workspace holds a handful of keys: listed whole, up to this many. */
export const MAX_LISTED_ENROLLMENT_KEYS = 500;

export function enrollmentKeysStore(db: Db) {
  const keys = () => db<EnrollmentKeyRow>('enrollment_keys');
  return {
    async insert(key: Omit<EnrollmentKey, 'revokedUtc' | 'lastUsedUtc' | 'useCount'>, keyHash: string): Promise<void> {
      await keys().insert({
        id: key.id,
        workspace_id: key.workspaceId,
        name: key.name,
        key_hash: keyHash,
        environment_ids: key.environmentIds,
        tag_ids: key.tagIds,
        created_at: key.createdUtc,
        expires_at: key.expiresUtc,
      });
    },
    async get(id: string): Promise<EnrollmentKey | null> {
      const row = await keys().where({ id }).first();
      return row ? toKey(row) : null;
    },
    /** Any key with this hash, revoked or expired included (the bootstrap key is created once). */
    async findByHash(keyHash: string): Promise<EnrollmentKey | null> {
      const row = await keys().where({ key_hash: keyHash }).first();
      return row ? toKey(row) : null;
    },
    /** The key with this hash if it is neither revoked nor expired at `now`. */
    async findUsableByHash(keyHash: string, now: Date): Promise<EnrollmentKey | null> {
      const row = await keys()
        .where({ key_hash: keyHash })
        .whereNull('revoked_at')
        .where((q) => {
          void q.whereNull('expires_at').orWhere('expires_at', '>', now);
        })
        .first();
      return row ? toKey(row) : null;
    },
    async list(workspaceId: string): Promise<EnrollmentKey[]> {
      const rows = await keys()
        .where({ workspace_id: workspaceId })
        .orderBy([{ column: 'created_at', order: 'desc' }, { column: 'id' }])
        .limit(MAX_LISTED_ENROLLMENT_KEYS);
      return rows.map(toKey);
    },
    /** False when it was already revoked. */
    async revoke(id: string, at: Date): Promise<boolean> {
      return (await keys().where({ id }).whereNull('revoked_at').update({ revoked_at: at })) > 0;
    },
    async recordUse(id: string, at: Date): Promise<void> {
      await keys()
        .where({ id })
        .update({ last_used_at: at, use_count: db.raw('use_count + 1') });
    },
  };
}
