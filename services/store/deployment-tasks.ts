/** Deployment tasks: one step on one machine (or a machine-less step record), the unit agents run. */
import type { Db } from './db.ts';
import { appendLogs, type NewLogEntry } from './deployment-logs.ts';

export const TaskStatus = {
  Pending: 'Pending',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Skipped: 'Skipped',
  Cancelled: 'Cancelled',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];
export const FINAL_TASK_STATUSES: readonly TaskStatus[] = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];

export interface DeploymentTask {
  id: string;
  deploymentId: string;
  stageIndex: number;
  stepId: string;
  stepName: string;
  machineId: string | null;
  machineName: string | null;
  status: TaskStatus;
  exitCode: number | null;
  message: string | null;
  parentLogId: string | null;
  dispatchedUtc: Date | null;
  startedUtc: Date | null;
  finishedUtc: Date | null;
  lastLogSeq: number;
}

interface TaskRow {
  id: string;
  deployment_id: string;
  stage_index: number;
  step_id: string;
  step_name: string;
  machine_id: string | null;
  machine_name: string | null;
  status: TaskStatus;
  exit_code: number | null;
  message: string | null;
  parent_log_id: string | null;
  dispatched_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  last_log_seq: number;
}

function toTask(row: TaskRow): DeploymentTask {
  return {
    id: row.id,
    deploymentId: row.deployment_id,
    stageIndex: row.stage_index,
    stepId: row.step_id,
    stepName: row.step_name,
    machineId: row.machine_id,
    machineName: row.machine_name,
    status: row.status,
    exitCode: row.exit_code,
    message: row.message,
    parentLogId: row.parent_log_id,
    dispatchedUtc: row.dispatched_at,
    startedUtc: row.started_at,
    finishedUtc: row.finished_at,
    lastLogSeq: row.last_log_seq,
  };
}

export function deploymentTasksStore(db: Db) {
  return {
    async get(id: string): Promise<DeploymentTask | null> {
      const row = await db<TaskRow>('deployment_tasks').where({ id }).first();
      return row ? toTask(row) : null;
    },
    async listForDeployment(deploymentId: string): Promise<DeploymentTask[]> {
      return (await db<TaskRow>('deployment_tasks').where({ deployment_id: deploymentId }).orderBy([{ column: 'stage_index' }, { column: 'machine_name' }, { column: 'id' }])).map(toTask);
    },
    /** Tasks dispatched to a machine and not finished (sent again when its agent reconnects). */
    async listRunningOnMachine(machineId: string): Promise<DeploymentTask[]> {
      return (await db<TaskRow>('deployment_tasks').where({ machine_id: machineId, status: 'Running' })).map(toTask);
    },
    /** Inserts the plan's tasks once; a second call for the same deployment (after failover) adds nothing. */
    async insertMany(tasks: Array<Pick<DeploymentTask, 'id' | 'deploymentId' | 'stageIndex' | 'stepId' | 'stepName' | 'machineId' | 'machineName'>>): Promise<void> {
      if (tasks.length === 0) return;
      await db('deployment_tasks')
        .insert(
          tasks.map((t) => ({
            id: t.id,
            deployment_id: t.deploymentId,
            stage_index: t.stageIndex,
            step_id: t.stepId,
            step_name: t.stepName,
            machine_id: t.machineId,
            machine_name: t.machineName,
          })),
        )
        .onConflict(['deployment_id', 'step_id', 'machine_id'])
        .ignore();
    },
    /**
     * Pending → Running for every task in `ids` that is still Pending, in one statement; returns
     * the IDs that moved. Each task's parent log entry ("Running 'X' on M") takes the task's ID.
     */
    async startMany(ids: readonly string[], now: Date): Promise<string[]> {
      if (ids.length === 0) return [];
      const rows = await db('deployment_tasks')
        .whereIn('id', ids)
        .where({ status: 'Pending' })
        .update({ status: 'Running', parent_log_id: db.ref('id'), dispatched_at: now, started_at: now })
        .returning('id');
      return rows.map((r: { id: string }) => r.id);
    },
    /**
     * Running → a final status, and the task's log line, in ONE statement: the line is stored
     * only when the task moved, and both commit together. False when the task was not Running
     * (finished already: a result is recorded once).
     */
    async finish(
      task: Pick<DeploymentTask, 'id' | 'deploymentId'>,
      patch: { status: TaskStatus; exitCode: number | null; message: string; finishedUtc: Date },
      line: NewLogEntry,
      now: Date,
    ): Promise<boolean> {
      const moved = db('deployment_tasks')
        .where({ id: task.id, status: 'Running' })
        .update({ status: patch.status, exit_code: patch.exitCode, message: patch.message, finished_at: patch.finishedUtc })
        .returning('id')
        .toSQL();
      // The line has a fresh id and no agent line number, so it is stored exactly when the task moved.
      return (await appendLogs(db, task.deploymentId, [line], now, moved)).length > 0;
    },
    /**
     * Moves a task from one of `from` to a new status. Returns false when it was no longer in
     * `from` — the guard that keeps a step from being started twice or finished twice.
     */
    async transition(
      id: string,
      from: readonly TaskStatus[],
      patch: { status: TaskStatus; exitCode?: number | null; message?: string | null; parentLogId?: string; dispatchedUtc?: Date; startedUtc?: Date; finishedUtc?: Date },
    ): Promise<boolean> {
      const row: Record<string, unknown> = { status: patch.status };
      if (patch.exitCode !== undefined) row.exit_code = patch.exitCode;
      if (patch.message !== undefined) row.message = patch.message;
      if (patch.parentLogId !== undefined) row.parent_log_id = patch.parentLogId;
      if (patch.dispatchedUtc !== undefined) row.dispatched_at = patch.dispatchedUtc;
      if (patch.startedUtc !== undefined) row.started_at = patch.startedUtc;
      if (patch.finishedUtc !== undefined) row.finished_at = patch.finishedUtc;
      const count = await db('deployment_tasks').where({ id }).whereIn('status', from).update(row);
      return count > 0;
    },
  };
}
