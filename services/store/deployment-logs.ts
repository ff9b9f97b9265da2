/**
 * Deployment logs. Every line gets a .NET tick unique within its deployment and increasing in
 * insertion order: ticks are allocated under the deployment's row lock as
 * max(now, last + 1), so `getLogsAfter=T` (strictly after) never skips or repeats a line.
 */
import { dateToTicks, newId } from '../core/index.ts';
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

const isError = (level: LogLevel) => level === 'Error' || level === 'Critical';

export function deploymentLogsStore(db: Db) {
  return {
    /**
     * Appends entries and updates the deployment's error/warning counts and last tick. Must run
     * inside a transaction (the row lock is what makes ticks unique); returns the stored entries.
     */
    async append(deploymentId: string, entries: NewLogEntry[], now: Date): Promise<LogEntry[]> {
      if (entries.length === 0) return [];
      const locked = await db('deployments').where({ id: deploymentId }).forUpdate().first('last_log_tick');
      if (!locked) return [];
      let fresh = entries;
      const seqs = entries.filter((e) => e.taskId && e.agentSeq != null);
      if (seqs.length > 0) {
        const stored = await db('deployment_logs')
          .whereIn(['task_id', 'agent_seq'], seqs.map((e) => [e.taskId!, e.agentSeq!]))
          .select('task_id', 'agent_seq');
        const seen = new Set(stored.map((r) => `${r.task_id}:${r.agent_seq}`));
        fresh = entries.filter((e) => !(e.taskId && e.agentSeq != null && seen.has(`${e.taskId}:${e.agentSeq}`)));
        if (fresh.length === 0) return [];
      }
      let tick = BigInt(locked.last_log_tick as string);
      const rows: LogRow[] = fresh.map((entry) => {
        const created = entry.createdUtc ?? now;
        tick = maxBig(tick + 1n, dateToTicks(created));
        return {
          id: entry.id ?? newId(),
          deployment_id: deploymentId,
          tick: tick.toString(),
          created_at: created,
          level: entry.level,
          data: entry.data,
          exception_data: entry.exceptionData ?? null,
          step_id: entry.stepId ?? null,
          parent_log_id: entry.parentLogId ?? null,
          task_id: entry.taskId ?? null,
        };
      });
      await db('deployment_logs').insert(
        rows.map((row, index) => ({ ...row, agent_seq: fresh[index]!.agentSeq ?? null })),
      );
      const errors = fresh.filter((e) => isError(e.level)).length;
      const warnings = fresh.filter((e) => e.level === 'Warning').length;
      await db('deployments')
        .where({ id: deploymentId })
        .update({
          last_log_tick: tick.toString(),
          error_count: db.raw('error_count + ?', [errors]),
          warning_count: db.raw('warning_count + ?', [warnings]),
          last_update_at: now,
          change_tick: db.raw("nextval('deployment_change_seq')"),
        });
      return rows.map(toEntry);
    },
    /** The highest agent line number stored for a task (0: none): what AckLogs reports. */
    async maxAgentSeq(taskId: string): Promise<number> {
      const [row] = await db('deployment_logs').where({ task_id: taskId }).max({ m: 'agent_seq' });
      return Number(row?.m ?? 0);
    },
    async exists(id: string): Promise<boolean> {
      return (await db('deployment_logs').where({ id }).first('id')) !== undefined;
    },
    /** Entries with tick > afterTick, in tick order. */
    async read(deploymentId: string, afterTick: bigint | null, limit: number): Promise<LogEntry[]> {
      const query = db<LogRow>('deployment_logs').where({ deployment_id: deploymentId });
      if (afterTick !== null) query.where('tick', '>', afterTick.toString());
      return (await query.orderBy('tick').limit(limit)).map(toEntry);
    },
  };
}

function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
