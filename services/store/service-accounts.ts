import type { Role } from '../core/index.ts';
import type { Db } from './db.ts';

export interface ServiceAccount {
  id: string;
  organizationId: string;
  workspaceId: string | null;
  name: string;
  roles: Role[];
}

export interface ApiKey {
  id: string;
  serviceAccountId: string;
  createdUtc: Date;
}

interface ServiceAccountRow {
  id: string;
  organization_id: string;
  workspace_id: string | null;
  name: string;
  roles: Role[];
  deleted_at: Date | null;
}

function toServiceAccount(row: ServiceAccountRow): ServiceAccount {
  return {
    id: row.id,
    organizationId: row.organization_id,
    workspaceId: row.workspace_id,
    name: row.name,
    roles: row.roles,
  };
}

export function serviceAccountsStore(db: Db) {
  const live = () => db<ServiceAccountRow>('service_accounts').whereNull('deleted_at');
  return {
    async get(id: string): Promise<ServiceAccount | null> {
      const row = await live().where({ id }).first();
      return row ? toServiceAccount(row) : null;
    },
    /** The live account owning a live key with this hash, in a live workspace (or organization-wide). */
    async findByKeyHash(id: string, keyHash: string): Promise<ServiceAccount | null> {
      const row = await db<ServiceAccountRow>('service_accounts as a')
        .join('api_keys as k', 'k.service_account_id', 'a.id')
        .leftJoin('workspaces as w', 'w.id', 'a.workspace_id')
        .where({ 'a.id': id, 'k.key_hash': keyHash })
        .whereNull('a.deleted_at')
        .whereNull('k.deleted_at')
        .where((q) => {
          q.whereNull('a.workspace_id').orWhereNull('w.deleted_at');
        })
        .first('a.*');
      return row ? toServiceAccount(row) : null;
    },
    async list(organizationId: string, workspaceId: string | null): Promise<ServiceAccount[]> {
      const query = live().where({ organization_id: organizationId }).orderBy('name');
      if (workspaceId) query.where({ workspace_id: workspaceId });
      return (await query).map(toServiceAccount);
    },
    async insert(account: ServiceAccount): Promise<void> {
      await db('service_accounts').insert({
        id: account.id,
        organization_id: account.organizationId,
        workspace_id: account.workspaceId,
        name: account.name,
        roles: JSON.stringify(account.roles),
      });
    },
    /** Creates or repairs the account with this ID (used by bootstrap with fixed credentials). */
    async upsert(account: ServiceAccount): Promise<void> {
      await db('service_accounts')
        .insert({
          id: account.id,
          organization_id: account.organizationId,
          workspace_id: account.workspaceId,
          name: account.name,
          roles: JSON.stringify(account.roles),
        })
        .onConflict('id')
        .merge({ roles: JSON.stringify(account.roles), workspace_id: account.workspaceId, deleted_at: null });
    },
    async softDelete(id: string, at: Date): Promise<void> {
      await live().where({ id }).update({ deleted_at: at });
      await db('api_keys').where({ service_account_id: id }).whereNull('deleted_at').update({ deleted_at: at });
    },
    async insertApiKey(key: { id: string; serviceAccountId: string; keyHash: string }): Promise<void> {
      await db('api_keys')
        .insert({ id: key.id, service_account_id: key.serviceAccountId, key_hash: key.keyHash })
        .onConflict('key_hash')
        .ignore();
    },
    async getApiKey(id: string): Promise<ApiKey | null> {
      const row = await db('api_keys').where({ id }).whereNull('deleted_at').first();
      return row ? { id: row.id, serviceAccountId: row.service_account_id, createdUtc: row.created_at } : null;
    },
    async listApiKeys(serviceAccountId: string): Promise<ApiKey[]> {
      const rows = await db('api_keys')
        .where({ service_account_id: serviceAccountId })
        .whereNull('deleted_at')
        .orderBy('created_at');
      return rows.map((row) => ({ id: row.id, serviceAccountId: row.service_account_id, createdUtc: row.created_at }));
    },
    async deleteApiKey(id: string, at: Date): Promise<void> {
      await db('api_keys').where({ id }).whereNull('deleted_at').update({ deleted_at: at });
    },
  };
}
