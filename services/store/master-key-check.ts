/**
 * The recorded master key check (migration 202612030900), a sealed value to try a key on, and what
 * rotating the key rewrites (domain/master-key.ts): every value sealed with it, a page at a time,
 * so each statement stays the same size whatever the installation holds.
 */
import type { ReleaseSnapshot } from '../core/index.ts';
import type { Db } from './db.ts';

/**
 * Held shared by every running control plane (replica-presence.ts) for as long as it runs; a
 * rotation takes it exclusively, so it cannot run beside a replica that seals with the old key,
 * and a replica that starts meanwhile waits for it to end.
 */
export const REPLICA_PRESENCE_LOCK_KEY = 727_003; // arbitrary, fixed; 727_001 and 727_002 are the migrations' and the seed's

const PAGE = 500;
/** Snapshots can be large (every step and variable of a release): fewer per read. */
const SNAPSHOT_PAGE = 50;

/** The tables and columns that hold values sealed with the master key (besides release snapshots). */
const SEALED_COLUMNS = [
  { table: 'variable_values', column: 'value_encrypted' },
  { table: 'feeds', column: 'config_encrypted' },
  { table: 'cloud_accounts', column: 'config_encrypted' },
] as const;
export type SealedTable = (typeof SEALED_COLUMNS)[number]['table'];

/** Opens a value with the key in use and seals it with the next one; says which row it could not open. */
export type Reseal = (sealed: string, where: { table: string; id: string }) => string;

export function masterKeyCheckStore(db: Db) {
  return {
    async recorded(): Promise<string | null> {
      const row = await db('master_key_check').where({ id: 1 }).first('key_check');
      return row ? (row.key_check as string) : null;
    },
    /** Records `check` unless another replica recorded one first; returns the one recorded. */
    async record(check: string): Promise<string> {
      await db('master_key_check').insert({ id: 1, key_check: check }).onConflict('id').ignore();
      const row = await db('master_key_check').where({ id: 1 }).first('key_check');
      return row.key_check as string;
    },
    /** Any one value sealed with the master key (an installation from before the check was kept). */
    async oneSealedValue(): Promise<string | null> {
      const { rows } = await db.raw(
        `${SEALED_COLUMNS.map(({ table, column }) => `(select ${column} as sealed from ${table} where ${column} is not null limit 1)`).join(' union all ')} limit 1`,
      );
      return (rows[0]?.sealed as string | undefined) ?? null;
    },

    // What follows runs inside one transaction (store.transaction): a rotation is all or nothing.

    /**
     * Takes the presence lock exclusively for the transaction: false, and nothing taken, while a
     * running control plane holds it.
     */
    async lockOutReplicas(): Promise<boolean> {
      const { rows } = await db.raw('select pg_try_advisory_xact_lock(?) as locked', [REPLICA_PRESENCE_LOCK_KEY]);
      return rows[0].locked === true;
    },
    /** The control planes holding the presence lock, as PostgreSQL sees their connections. */
    async replicasRunning(): Promise<string[]> {
      const { rows } = await db.raw(
        `select a.application_name, a.client_addr::text as address, a.backend_start
           from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.classid = 0 and l.objid = ? and l.granted
            and l.database = (select oid from pg_database where datname = current_database())
          order by a.backend_start`,
        [REPLICA_PRESENCE_LOCK_KEY],
      );
      return (rows as Array<{ application_name: string; address: string | null; backend_start: Date }>).map(
        (r) =>
          `${r.application_name || 'a client'} from ${r.address ?? 'a local socket'}, connected since ${r.backend_start.toISOString()}`,
      );
    },
    /** The recorded check, locked until the transaction ends. */
    async recordedForUpdate(): Promise<string | null> {
      const row = await db('master_key_check').where({ id: 1 }).forUpdate().first('key_check');
      return row ? (row.key_check as string) : null;
    },
    async replaceCheck(check: string): Promise<void> {
      await db('master_key_check').insert({ id: 1, key_check: check }).onConflict('id').merge();
    },
    /** Reseals every value of the sealed columns, deleted rows' too; the count per table. */
    async resealColumns(reseal: Reseal): Promise<Record<SealedTable, number>> {
      const counts = { variable_values: 0, feeds: 0, cloud_accounts: 0 };
      for (const { table, column } of SEALED_COLUMNS) {
        for (let after = ''; ;) {
          const rows: Array<{ id: string; sealed: string }> = await db(table)
            .select('id', `${column} as sealed`)
            .whereNotNull(column)
            .where('id', '>', after)
            .orderBy('id')
            .limit(PAGE);
          if (rows.length === 0) break;
          const sealed = rows.map((row) => reseal(row.sealed, { table, id: row.id }));
          // Two array parameters, not two per row: the statement's size does not grow with the page.
          await db.raw(
            `update ${table} t set ${column} = x.sealed from unnest(?::text[], ?::text[]) as x(id, sealed) where t.id = x.id`,
            [rows.map((row) => row.id), sealed],
          );
          counts[table] += rows.length;
          after = rows.at(-1)!.id;
        }
      }
      return counts;
    },
    /** Reseals the Sensitive values frozen in release snapshots; how many releases held one. */
    async resealSnapshots(reseal: Reseal): Promise<number> {
      let count = 0;
      for (let after = ''; ;) {
        const rows: Array<{ id: string; snapshot: ReleaseSnapshot }> = await db('releases')
          .select('id', 'snapshot')
          .where('id', '>', after)
          .whereRaw('jsonb_path_exists(snapshot, ?::jsonpath)', [
            '$.variables[*].values[*].valueEncrypted ? (@ != null)',
          ])
          .orderBy('id')
          .limit(SNAPSHOT_PAGE);
        if (rows.length === 0) return count;
        for (const { id, snapshot } of rows)
          for (const variable of snapshot.variables)
            for (const value of variable.values)
              if (value.valueEncrypted !== null)
                value.valueEncrypted = reseal(value.valueEncrypted, { table: 'releases', id });
        await db.raw(
          `update releases r set snapshot = x.snapshot::jsonb from unnest(?::text[], ?::text[]) as x(id, snapshot) where r.id = x.id`,
          [rows.map((row) => row.id), rows.map((row) => JSON.stringify(row.snapshot))],
        );
        count += rows.length;
        after = rows.at(-1)!.id;
      }
    },
  };
}
