/**
 * Cloud accounts (contract §3): credentials for cloud targets. The whole config is sealed by the
 * domain before it gets here; this module only ever sees ciphertext.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface CloudAccount {
  id: string;
  workspaceId: string;
  name: string;
  type: string;
  configEncrypted: string;
}

interface CloudAccountRow {
  id: string;
  workspace_id: string;
  name: string;
  account_type: string;
  config_encrypted: string;
}

function toCloudAccount(row: CloudAccountRow): CloudAccount {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    type: row.account_type,
    configEncrypted: row.config_encrypted,
  };
}

export function cloudAccountsStore(db: Db) {
  const accounts = () => db<CloudAccountRow>('cloud_accounts');
  return {
    async get(id: string): Promise<CloudAccount | null> {
      const row = await accounts().where({ id }).first();
      return row ? toCloudAccount(row) : null;
    },
    async list(workspaceId: string, page: Page): Promise<Paged<CloudAccount>> {
      return pageOf(accounts().where({ workspace_id: workspaceId }), page, [{ column: 'name' }], toCloudAccount);
    },
    async insert(account: CloudAccount): Promise<void> {
      await accounts().insert({
        id: account.id,
        workspace_id: account.workspaceId,
        name: account.name,
        account_type: account.type,
        config_encrypted: account.configEncrypted,
      });
    },
    async update(id: string, patch: Partial<Pick<CloudAccount, 'name' | 'type' | 'configEncrypted'>>): Promise<void> {
      const row: Partial<CloudAccountRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.type !== undefined) row.account_type = patch.type;
      if (patch.configEncrypted !== undefined) row.config_encrypted = patch.configEncrypted;
      if (Object.keys(row).length > 0) await accounts().where({ id }).update(row);
    },
    async delete(id: string): Promise<void> {
      await accounts().where({ id }).delete();
    },
  };
}
