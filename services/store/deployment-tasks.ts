/** Deployment tasks: one step on one machine (or a machine-less step record), the unit agents run. */
import { whereIdIn } from './id-arrays.ts';
import type { Knex } from 'knex';
import type { TaskStatus } from '../core/index.ts';
import type { Db } from './db.ts';
import { MACHINE_COLUMNS, toTargetMachine, type MachineRow, type TargetMachine } from './deployment-machines.ts';
import type { Deployment } from './deployments.ts';
import { jsonDate } from './json-rows.ts';

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

/** A task read as JSON (row_to_json inside a statement that returns other rows): timestamps come as text. */
export function taskFromJson(row: Record<string, unknown>): DeploymentTask {
  return toTask({
    ...(row as unknown as TaskRow),
    dispatched_at: jsonDate(row.dispatched_at),
    started_at: jsonDate(row.started_at),
    finished_at: jsonDate(row.finished_at),
  });
}

/** A running task with the facts of its deployment and machine that its payload is built from. */
export interface DispatchedTask {
  task: DeploymentTask;
  deployment: Pick<
    Deployment,
    'id' | 'releaseId' | 'environmentId' | 'environmentName' | 'redownloadPackages' | 'cancellationRequestedUtc'
  >;
  machine: TargetMachine;
}

async function listDispatched(db: Db, narrow: (query: Knex.QueryBuilder) => void): Promise<DispatchedTask[]> {
  const query = db('deployment_tasks as t')
    .join('deployments as d', 'd.id', 't.deployment_id')
    .join('machines as m', 'm.id', 't.machine_id')
    .where({ 't.status': 'Running' });
  narrow(query);
  const rows = await query.select(
    't.*',
    'd.release_id as d_release_id',
    'd.environment_id as d_environment_id',
    'd.environment_name as d_environment_name',
    'd.redownload_packages as d_redownload_packages',
    'd.cancellation_requested_at as d_cancellation_requested_at',
    ...MACHINE_COLUMNS.map((column) => `m.${column} as m_${column}`),
  );
  return rows.map((row: TaskRow & Record<string, unknown>) => ({
    task: toTask(row),
    deployment: {
      id: row.deployment_id,
      releaseId: row.d_release_id as string,
      environmentId: row.d_environment_id as string,
      environmentName: row.d_environment_name as string,
      redownloadPackages: row.d_redownload_packages as boolean,
      cancellationRequestedUtc: row.d_cancellation_requested_at as Date | null,
    },
    machine: toTargetMachine(
      Object.fromEntries(MACHINE_COLUMNS.map((column) => [column, row[`m_${column}`]])) as unknown as MachineRow,
    ),
  }));
}

type NewTaskRows = Array<
  Pick<DeploymentTask, 'id' | 'deploymentId' | 'stageIndex' | 'stepId' | 'stepName' | 'machineId' | 'machineName'>
>;

// One array per column (unnest): seven bind parameters however many machines (see id-arrays.ts).
const INSERT_TASKS = `insert into deployment_tasks (id, deployment_id, stage_index, step_id, step_name, machine_id, machine_name)
  select * from unnest(?::text[], ?::text[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[])
  on conflict (deployment_id, step_id, machine_id) do nothing`;

/** node-postgres binds a JS array (nulls included) as a PostgreSQL array; knex's types know only string[]. */
function taskColumns(tasks: NewTaskRows): string[][] {
  const column = <K extends keyof NewTaskRows[number]>(key: K) => tasks.map((t) => t[key]) as unknown as string[];
  return [
    column('id'),
    column('deploymentId'),
    column('stageIndex'),
    column('stepId'),
    column('stepName'),
    column('machineId'),
    column('machineName'),
  ];
}

export function deploymentTasksStore(db: Db) {
  return {
    async get(id: string): Promise<DeploymentTask | null> {
      const row = await db<TaskRow>('deployment_tasks').where({ id }).first();
      return row ? toTask(row) : null;
    },
    async listForDeployment(deploymentId: string): Promise<DeploymentTask[]> {
      return (
        await db<TaskRow>('deployment_tasks')
          .where({ deployment_id: deploymentId })
          .orderBy([{ column: 'stage_index' }, { column: 'machine_name' }, { column: 'id' }])
      ).map(toTask);
    },
    /**
     * Those of `ids` (the tasks a replica knows as running) that are no longer Running: what
     * ended since it last looked, read without the deployment's other tasks.
     */
    async listEnded(deploymentId: string, ids: readonly string[]): Promise<DeploymentTask[]> {
      if (ids.length === 0) return [];
      // By their IDs only: `IS TRUE` keeps an index from serving the rest (see RECORD_SQL).
      const rows = await whereIdIn(db<TaskRow>('deployment_tasks'), 'id', ids).whereRaw(
        "(deployment_id = ? AND status <> 'Running') IS TRUE",
        [deploymentId],
      );
      return rows.map(toTask);
    },
    /**
     * Tasks dispatched to a machine and not finished (sent again when its agent reconnects), with
     * what building their payload needs from the deployment and the machine.
     */
    listDispatchedTo(machineId: string): Promise<DispatchedTask[]> {
      return listDispatched(db, (query) => {
        query.where('t.machine_id', machineId);
      });
    },
    /** The same for many machines in one query (those whose agents disconnected together). */
    async listDispatchedToMachines(machineIds: readonly string[]): Promise<DispatchedTask[]> {
      if (machineIds.length === 0) return [];
      return listDispatched(db, (query) => {
        whereIdIn(query, 't.machine_id', machineIds);
      });
    },
    /**
     * The running tasks of these machines, with whether their deployment is being cancelled: what
     * a heartbeat checks its session against, for every agent that beat in the last second at once.
     */
    async listRunningOf(
      machineIds: readonly string[],
    ): Promise<Array<{ taskId: string; machineId: string; cancelling: boolean }>> {
      if (machineIds.length === 0) return [];
      const rows: Array<{ id: string; machine_id: string; cancelling: boolean }> = await whereIdIn(
        db('deployment_tasks as t')
          .join('deployments as d', 'd.id', 't.deployment_id')
          .where({ 't.status': 'Running' }),
        't.machine_id',
        machineIds,
      ).select('t.id', 't.machine_id', db.raw('d.cancellation_requested_at is not null as cancelling'));
      return rows.map((r) => ({ taskId: r.id, machineId: r.machine_id, cancelling: r.cancelling }));
    },
    /**
     * These tasks, where still running, read the same way: one query for every machine of a
     * deployment that started together (fifty agents woken at once).
     */
    async listDispatchedByIds(taskIds: readonly string[]): Promise<DispatchedTask[]> {
      if (taskIds.length === 0) return [];
      return listDispatched(db, (query) => {
        whereIdIn(query, 't.id', taskIds);
      });
    },
    /**
     * Inserts the plan's tasks once; a second call for the same deployment (after failover) adds
     * nothing. Answers how many it added: the caller holds the rows already (a bulk insert of
     * thousands).
     */
    async insertManyCounted(tasks: NewTaskRows): Promise<number> {
      if (tasks.length === 0) return 0;
      // Named (store/db.ts): one text whatever the count, and its plan does not depend on it.
      const result: { rowCount: number | null } = await db
        .raw(INSERT_TASKS, taskColumns(tasks))
        .options({ name: 'gantry_deployment_tasks_insert_v1' });
      return result.rowCount ?? 0;
    },
    /**
     * Moves a task from one of `from` to a new status. Returns false when it was no longer in
     * `from` — the guard that keeps a step from being started twice or finished twice.
     */
    async transition(
      id: string,
      from: readonly TaskStatus[],
      patch: {
        status: TaskStatus;
        exitCode?: number | null;
        message?: string | null;
        parentLogId?: string;
        dispatchedUtc?: Date;
        startedUtc?: Date;
        finishedUtc?: Date;
      },
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
