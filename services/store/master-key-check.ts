/** The recorded master key check (migration 202612030900) and a sealed value to try a key on. */
import type { Db } from './db.ts';

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
      const { rows } = await db.raw(`
        (select value_encrypted as sealed from variable_values where value_encrypted is not null limit 1)
        union all (select config_encrypted from cloud_accounts limit 1)
        union all (select config_encrypted from feeds where config_encrypted is not null limit 1)
        limit 1`);
      return (rows[0]?.sealed as string | undefined) ?? null;
    },
  };
}
