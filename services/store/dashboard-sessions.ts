/**
 * Dashboard sign-in sessions: a random token in an HttpOnly cookie, stored here only as its hash.
 * A session is live while unexpired, unrevoked, and while the account, the API key it was opened
 * with and the account's workspace are live.
 */
import type { Role } from '../core/index.ts';
import type { Db } from './db.ts';
import type { ServiceAccount } from './service-accounts.ts';

export interface DashboardSession {
  id: string;
  expiresUtc: Date;
  account: ServiceAccount;
}

interface SessionRow {
  id: string;
  expires_at: Date;
  account_id: string;
  organization_id: string;
  workspace_id: string | null;
  name: string;
  roles: Role[];
}

export function dashboardSessionsStore(db: Db) {
  return {
    /**
     * Opens a session for the live API key with this hash, owned by `serviceAccountId`; false when
     * there is none (the caller has already checked the credentials, so this only loses a race).
     */
    async insert(session: {
      id: string;
      tokenHash: string;
      serviceAccountId: string;
      apiKeyHash: string;
      createdUtc: Date;
      expiresUtc: Date;
    }): Promise<boolean> {
      const result = await db.raw<{ rowCount: number }>(
        `insert into dashboard_sessions (id, token_hash, service_account_id, api_key_id, created_at, expires_at)
         select ?, ?, k.service_account_id, k.id, ?, ? from api_keys k
         where k.key_hash = ? and k.service_account_id = ? and k.deleted_at is null`,
        [
          session.id,
          session.tokenHash,
          session.createdUtc,
          session.expiresUtc,
          session.apiKeyHash,
          session.serviceAccountId,
        ],
      );
      return result.rowCount > 0;
    },
    /** The live session with this token hash and its account, in one read; null otherwise. */
    async findLive(tokenHash: string, now: Date): Promise<DashboardSession | null> {
      const row: SessionRow | undefined = await db('dashboard_sessions as s')
        .join('service_accounts as a', 'a.id', 's.service_account_id')
        .join('api_keys as k', 'k.id', 's.api_key_id')
        .leftJoin('workspaces as w', 'w.id', 'a.workspace_id')
        .where('s.token_hash', tokenHash)
        .whereNull('s.revoked_at')
        .where('s.expires_at', '>', now)
        .whereNull('a.deleted_at')
        .whereNull('k.deleted_at')
        .where((q) => {
          q.whereNull('a.workspace_id').orWhereNull('w.deleted_at');
        })
        .first(
          's.id',
          's.expires_at',
          'a.id as account_id',
          'a.organization_id',
          'a.workspace_id',
          'a.name',
          'a.roles',
        );
      if (!row) return null;
      return {
        id: row.id,
        expiresUtc: row.expires_at,
        account: {
          id: row.account_id,
          organizationId: row.organization_id,
          workspaceId: row.workspace_id,
          name: row.name,
          roles: row.roles,
        },
      };
    },
    /** Forgets sessions that ended (expired or signed out) before `before`. */
    async deleteEnded(before: Date): Promise<void> {
      await db('dashboard_sessions').where('expires_at', '<', before).orWhere('revoked_at', '<', before).delete();
    },
    async revoke(id: string, now: Date): Promise<void> {
      await db('dashboard_sessions').where({ id }).whereNull('revoked_at').update({ revoked_at: now });
    },
  };
}
