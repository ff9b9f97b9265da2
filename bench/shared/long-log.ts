/** A deployment's log made `lines` long in SQL, as an agent stores what a step prints. */
import type { Knex } from 'knex';

/**
 * Chunks of 1,000 lines (deployment_log_chunks) after the deployment's last tick, its last tick
 * moved past them. `warningEvery`: every that-many-th chunk ends with a warning (one byte per
 * line: 1 Warning), as a build's output has a few; null: every line Information.
 */
export async function appendLongLog(
  db: Knex,
  deploymentId: string,
  lines: number,
  warningEvery: number | null = null,
): Promise<void> {
  const chunks = Math.ceil(lines / 1_000);
  await db.raw(
    `insert into deployment_log_chunks (deployment_id, first_tick, last_tick, task_id, first_seq, line_count, byte_count, levels, data)
     select d.id, d.last_log_tick + c * 1000 + 1, d.last_log_tick + (c + 1) * 1000, 'bench-task', c * 1000 + 1,
            1000, octet_length(x.data),
            case when ?::int is not null and c % ?::int = ?::int - 1 then set_byte(decode(repeat('00', 1000), 'hex'), 999, 1) end,
            x.data
     from deployments d, generate_series(0, ?::int - 1) c,
     lateral (select string_agg('bulk line ' || (c * 1000 + j) || ' of a long log, as a build tool prints it' || E'\\n', '' order by j) as data
              from generate_series(1, 1000) j) x
     where d.id = ?`,
    [warningEvery, warningEvery, warningEvery, chunks, deploymentId],
  );
  await db.raw('update deployments set last_log_tick = last_log_tick + ? where id = ?', [chunks * 1_000, deploymentId]);
}
