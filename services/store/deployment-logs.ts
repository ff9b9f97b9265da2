/**
 * Deployment logs. Every line gets a .NET tick unique within its deployment and increasing in
 * insertion order: ticks are allocated under the deployment's row lock as
 * max(now, last + 1), so `getLogsAfter=T` (strictly after) never skips or repeats a line.
 */
import { dateToTicks, newId } from '../core/index.ts';
import type { Knex } from 'knex';
import type { Db } from './db.ts';

export const LogLevel = {
  Trace: 'Trace',
  Debug: 'Debug',
  Information: 'Information',
  Warning: 'Warning',
  Error: 'Error',
  Critical: 'Critical',
  None: 'None',
} as const;
export type LogLevel = (typeof LogLevel)[keyof typeof LogLevel];

export interface NewLogEntry {
  /** Set when the caller needs to refer to the entry (as a parent) before it is stored. */
  id?: string;
  level: LogLevel;
  data: string;
  stepId?: string | null;
  parentLogId?: string | null;
  taskId?: string | null;
  /** The agent's per-task line number; a line already stored for the task is skipped. */
  agentSeq?: number | null;
  exceptionData?: string | null;
  createdUtc?: Date;
}

export interface LogEntry {
  id: string;
  deploymentId: string;
  tick: bigint;
  createdUtc: Date;
  level: LogLevel;
  data: string;
  exceptionData: string | null;
  stepId: string | null;
  parentLogId: string | null;
  taskId: string | null;
}

interface LogRow {
  id: string;
  deployment_id: string;
  tick: string;
  created_at: Date;
  level: LogLevel;
  data: string;
  exception_data: string | null;
  step_id: string | null;
  parent_log_id: string | null;
  task_id: string | null;
}

function toEntry(row: LogRow): LogEntry {
  return {
    id: row.id,
    deploymentId: row.deployment_id,
    tick: BigInt(row.tick),
    createdUtc: row.created_at,
    level: row.level,
    data: row.data,
    exceptionData: row.exception_data,
    stepId: row.step_id,
    parentLogId: row.parent_log_id,
    taskId: row.task_id,
  };
}

/**
 * Hot path: append log lines to one deployment. Parameters: 1 deployment ID, 2 JSON array of
 * {ord, id, created_at, created_tick, level, data, exception_data, step_id, parent_log_id,
 * task_id, agent_seq}, 3 deployment ID, 4 now, 5 deployment ID.
 *
 * Ticks: tick_r = max(tick_(r-1) + 1, created_tick_r), starting from the deployment's last tick.
 * Unrolled, that is r + max(last, max over j ≤ r of (created_tick_j − j)): a running max, so one
 * window function computes every tick. The row lock on the deployment (FOR UPDATE, held to the
 * end of the statement) makes commits happen in tick order, so a reader paging with
 * `tick > T` never skips a line that commits later with a smaller tick.
 *
 * An entry whose id is already stored is skipped, so a caller can write a parent entry with a
 * fixed id ("Step 'Deploy'") before each batch of its children and it is stored once. The check
 * cannot race: ids that repeat are deployment-scoped and every append of a deployment holds its
 * row lock.
 *
 * `guard`: a data-modifying statement run first in the same statement (a task's status change);
 * the lines are stored only when it returned a row, so the change and its line commit together.
 */
const appendLogsSql = (guard: string | null) => `
WITH ${guard === null ? '' : `guard AS (${guard}), `}locked AS (
  SELECT last_log_tick FROM deployments WHERE id = ?${guard === null ? '' : ' AND EXISTS (SELECT 1 FROM guard)'} FOR UPDATE
), input AS (
  SELECT x.* FROM jsonb_to_recordset(CAST(? AS jsonb)) AS x(
    ord int, id text, created_at timestamptz, created_tick bigint, level text, data text,
    exception_data text, step_id text, parent_log_id text, task_id text, agent_seq int)
), numbered AS (
  SELECT input.*, row_number() OVER (ORDER BY ord) AS r FROM input
), ticked AS (
  SELECT numbered.*,
         r + greatest((SELECT last_log_tick FROM locked),
                      max(created_tick - r) OVER (ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)) AS tick
  FROM numbered
  WHERE EXISTS (SELECT 1 FROM locked)
), fresh AS (
  SELECT * FROM ticked WHERE NOT EXISTS (SELECT 1 FROM deployment_logs l WHERE l.id = ticked.id)
), ins AS (
  INSERT INTO deployment_logs (id, deployment_id, tick, created_at, level, data, exception_data, step_id, parent_log_id, task_id, agent_seq)
  SELECT id, ?, tick, created_at, level, data, exception_data, step_id, parent_log_id, task_id, agent_seq FROM fresh
  ON CONFLICT (task_id, agent_seq) WHERE agent_seq IS NOT NULL DO NOTHING
  RETURNING *
), upd AS (
  UPDATE deployments SET
    last_log_tick = greatest(last_log_tick, (SELECT max(tick) FROM ins)),
    error_count = error_count + (SELECT count(*) FROM ins WHERE level IN ('Error', 'Critical')),
    warning_count = warning_count + (SELECT count(*) FROM ins WHERE level = 'Warning'),
    last_update_at = ?,
    change_tick = nextval('deployment_change_seq')
  WHERE id = ? AND EXISTS (SELECT 1 FROM ins)
  RETURNING id
)
SELECT ins.* FROM ins ORDER BY tick`;

const APPEND_LOGS_SQL = appendLogsSql(null);

/** A statement with `?` placeholders, as knex's `toSQL()` gives it. */
export interface SqlGuard {
  sql: string;
  bindings: readonly unknown[];
}

/** See APPEND_LOGS_SQL. Shared with the task store, which guards an append with a task's change. */
export async function appendLogs(db: Db, deploymentId: string, entries: NewLogEntry[], now: Date, guard: SqlGuard | null = null): Promise<LogEntry[]> {
  // An id repeated within the batch (a parent written before each of its children) counts once.
  const seen = new Set<string>();
  const unique = entries.filter((entry) => entry.id === undefined || (!seen.has(entry.id) && seen.add(entry.id)));
  if (unique.length === 0) return [];
  const input = unique.map((entry, ord) => {
    const created = entry.createdUtc ?? now;
    return {
      ord,
      id: entry.id ?? newId(),
      created_at: created.toISOString(),
      created_tick: dateToTicks(created).toString(),
      level: entry.level,
      data: entry.data,
      exception_data: entry.exceptionData ?? null,
      step_id: entry.stepId ?? null,
      parent_log_id: entry.parentLogId ?? null,
      task_id: entry.taskId ?? null,
      agent_seq: entry.agentSeq ?? null,
    };
  });
  const bindings = [deploymentId, JSON.stringify(input), deploymentId, now, deploymentId];
  const result = guard
    ? await db.raw<{ rows: LogRow[] }>(appendLogsSql(guard.sql), [...guard.bindings, ...bindings] as Knex.RawBinding[])
    : await db.raw<{ rows: LogRow[] }>(APPEND_LOGS_SQL, bindings);
  return result.rows.map(toEntry);
}

export function deploymentLogsStore(db: Db) {
  return {
    /**
     * Appends entries and updates the deployment's error/warning counts and last tick, in ONE
     * statement (see APPEND_LOGS_SQL): the deployment row stays locked for a single round trip,
     * so fifty agents streaming into one deployment do not queue behind each other's transactions.
     * Returns the entries actually stored (a line an agent re-sent, or an id already stored, is
     * stored once).
     */
    append(deploymentId: string, entries: NewLogEntry[], now: Date): Promise<LogEntry[]> {
      return appendLogs(db, deploymentId, entries, now);
    },
    /** Entries with tick > afterTick, in tick order. */
    async read(deploymentId: string, afterTick: bigint | null, limit: number): Promise<LogEntry[]> {
      const query = db<LogRow>('deployment_logs').where({ deployment_id: deploymentId });
      if (afterTick !== null) query.where('tick', '>', afterTick.toString());
      return (await query.orderBy('tick').limit(limit)).map(toEntry);
    },
  };
}

