/**
 * A plan's targets as the task rows a validation stores, made once each: the first decisions'
 * before the first dispatch, every other target's after it (orchestrator.ts, #validate), and the
 * rows of targets a later reader finds missing (#allTasks).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { newId } from '../core/index.ts';
import type { DeploymentTask, TargetMachine } from '../store/index.ts';
import { planTargets } from './planner.ts';
import { targetKey, type Plan, type Stage, type StartAction } from './plan-types.ts';

/** Targets whose tasks are made per turn of the event loop after the first dispatch (PlannedTasks.all). */
const ALL_TASKS_SLICE = 1_000;

/** A task row as validation inserts it (the other columns take their defaults). */
export type NewTask = Pick<
  DeploymentTask,
  'id' | 'deploymentId' | 'stageIndex' | 'stepId' | 'stepName' | 'machineId' | 'machineName'
>;

/** Every target's task in plan order and by target, and those PlannedTasks.first did not make. */
export interface AllTasks {
  all: DeploymentTask[];
  byKey: Map<string, DeploymentTask>;
  rest: DeploymentTask[];
}

/** A planned target's task as it is inserted, under a new ID. */
export function newTask(
  deploymentId: string,
  plan: Plan,
  target: { stageIndex: number; stepId: string; machineId: string; machineName: string },
): NewTask {
  return {
    id: newId(),
    deploymentId,
    stageIndex: target.stageIndex,
    stepId: target.stepId,
    stepName: stepName(plan.stages[target.stageIndex], target.stepId),
    machineId: target.machineId,
    machineName: target.machineName,
  };
}

/**
 * A plan's tasks as they will be stored, each made once: those of the first decisions before the
 * first dispatch (first), every other target's after it (all, or allNow inside a transaction).
 */
export class PlannedTasks {
  readonly #deploymentId: string;
  readonly #plan: Plan;
  readonly #machineNames: Map<string, string>;
  readonly #first = new Map<string, DeploymentTask>();

  constructor(deploymentId: string, plan: Plan, machines: ReadonlyArray<Pick<TargetMachine, 'machineId' | 'name'>>) {
    this.#deploymentId = deploymentId;
    this.#plan = plan;
    // The plan names a machine as it was read (plan-input.ts).
    this.#machineNames = new Map(machines.map((m) => [m.machineId, m.name]));
  }

  /** The task of the target this action names, made on first use. */
  first(action: StartAction): DeploymentTask | undefined {
    const key = targetKey(action.stepId, action.machineId);
    const made = this.#first.get(key);
    if (made) return made;
    const machineName = this.#machineNames.get(action.machineId);
    if (machineName === undefined) return undefined;
    const task = pendingTask(newTask(this.#deploymentId, this.#plan, { ...action, machineName }));
    this.#first.set(key, task);
    return task;
  }

  /** The tasks first() made, in the order it made them. */
  made(): DeploymentTask[] {
    return [...this.#first.values()];
  }

  /**
   * Every target's task, with a turn of the event loop every ALL_TASKS_SLICE targets: made after
   * the first dispatch, 10,000 take tens of ms, and the first agents' results should not wait for
   * all of them at once.
   */
  async all(): Promise<AllTasks> {
    const making = this.#make();
    for (let step = making.next(); ; step = making.next()) {
      if (step.done) return step.value;
      await nextTurn();
    }
  }

  /** Every target's task at once: inside a transaction, whose connection a turn would only hold longer. */
  allNow(): AllTasks {
    const making = this.#make();
    for (let step = making.next(); ; step = making.next()) if (step.done) return step.value;
  }

  /** Makes every target's task (first()'s reused), pausing after each ALL_TASKS_SLICE. */
  *#make(): Generator<void, AllTasks> {
    const all: DeploymentTask[] = [];
    const byKey = new Map<string, DeploymentTask>();
    const rest: DeploymentTask[] = [];
    for (const t of planTargets(this.#plan)) {
      const key = targetKey(t.stepId, t.machineId);
      let task = this.#first.get(key);
      if (!task) {
        task = pendingTask(newTask(this.#deploymentId, this.#plan, t));
        rest.push(task);
      }
      all.push(task);
      byKey.set(key, task);
      if (all.length % ALL_TASKS_SLICE === 0) yield;
    }
    return { all, byKey, rest };
  }
}

/**
 * A planned target as its stored task will read (the columns' defaults where it has nothing yet).
 * Written out field by field: `{ ...t, ...defaults }` (two spreads) takes V8's slow path, ~50 ms
 * for 10,000 tasks before the first dispatch, against ~1 ms for this literal.
 */
function pendingTask(t: NewTask): DeploymentTask {
  return {
    id: t.id,
    deploymentId: t.deploymentId,
    stageIndex: t.stageIndex,
    stepId: t.stepId,
    stepName: t.stepName,
    machineId: t.machineId,
    machineName: t.machineName,
    status: 'Pending',
    exitCode: null,
    message: null,
    parentLogId: null,
    dispatchedUtc: null,
    startedUtc: null,
    finishedUtc: null,
    lastLogSeq: 0,
  };
}

function stepName(stage: Stage | undefined, stepId: string): string {
  if (!stage) return stepId;
  if (stage.kind === 'Step') return stage.name;
  return stage.members.find((m) => m.stepId === stepId)?.name ?? stepId;
}
