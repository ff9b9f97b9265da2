/**
 * How a plan is stored (deployments.plan): machines as columns, not one object each. A plan of
 * 10,000 machines was 1.7 MiB of JSON, written by the statement that starts the deployment, before
 * its first dispatch (~6 ms to stringify and ~15 ms for PostgreSQL on an idle machine, several
 * times that under a fleet's load); as columns it is ~0.5 MiB. What most machines share is left
 * out: the rank when every machine has rank 0, whether it is online (only offline ones are
 * listed), and a rolling group's member steps (only machines that some member's filters exclude
 * list theirs). Plans stored before this (a Plan as is, without `v`) are read as they are.
 */
import type { PlannedMachine, Plan, RollingMachine, RollingStage, Stage, StepStage } from './plan-types.ts';

const VERSION = 2;

interface StoredMachines {
  ids: string[];
  names: string[];
  /** Positions of the machines that were offline when planned. */
  offline: number[];
}

interface StoredStepStage extends Omit<StepStage, 'targets'> {
  targets: StoredMachines;
}

interface StoredRollingMachines extends StoredMachines {
  /** Omitted when every machine has rank 0 (the machine-name order). */
  ranks?: number[];
  /**
   * Machines that not every running member applies to: position → the members (by index) that
   * do. The others run every running member, in member order.
   */
  partial: Record<string, number[]>;
}

interface StoredRollingStage extends Omit<RollingStage, 'machines'> {
  machines: StoredRollingMachines;
}

export interface StoredPlan {
  v: typeof VERSION;
  environmentId: string;
  stages: Array<StoredStepStage | StoredRollingStage>;
}

function storedMachines(machines: readonly PlannedMachine[]): StoredMachines {
  const offline: number[] = [];
  machines.forEach((m, i) => {
    if (!m.online) offline.push(i);
  });
  return { ids: machines.map((m) => m.machineId), names: machines.map((m) => m.machineName), offline };
}

/** The running members' step IDs, in member order: the steps of a machine all of them apply to. */
const runningStepIds = (stage: Pick<RollingStage, 'members'>): string[] =>
  stage.members.filter((m) => m.skip === null).map((m) => m.stepId);

function storedRollingMachines(stage: RollingStage): StoredRollingMachines {
  const running = runningStepIds(stage);
  const memberIndex = new Map(stage.members.map((m, k) => [m.stepId, k]));
  const partial: Record<string, number[]> = {};
  let ranked = false;
  stage.machines.forEach((m, i) => {
    if (m.rank !== 0) ranked = true;
    const all = m.stepIds.length === running.length && m.stepIds.every((id, k) => id === running[k]);
    if (!all) partial[i] = m.stepIds.map((id) => memberIndex.get(id)!);
  });
  return {
    ...storedMachines(stage.machines),
    ...(ranked ? { ranks: stage.machines.map((m) => m.rank) } : {}),
    partial,
  };
}

export function toStoredPlan(plan: Plan): StoredPlan {
  return {
    v: VERSION,
    environmentId: plan.environmentId,
    stages: plan.stages.map((stage) =>
      stage.kind === 'Step'
        ? { ...stage, targets: storedMachines(stage.targets) }
        : { ...stage, machines: storedRollingMachines(stage) },
    ),
  };
}

function plannedMachines(stored: StoredMachines): PlannedMachine[] {
  const offline = new Set(stored.offline);
  return stored.ids.map((machineId, i) => ({ machineId, machineName: stored.names[i]!, online: !offline.has(i) }));
}

function rollingMachines(stage: StoredRollingStage): RollingMachine[] {
  const { machines: stored, members } = stage;
  const running = runningStepIds(stage);
  const offline = new Set(stored.offline);
  return stored.ids.map((machineId, i) => {
    const only = stored.partial[i];
    const stepIds = only ? only.map((k) => members[k]!.stepId) : running.slice();
    // As the planner writes it: spelled out, in its field order (one shape for every machine).
    return {
      machineId,
      machineName: stored.names[i]!,
      online: !offline.has(i),
      rank: stored.ranks?.[i] ?? 0,
      stepIds,
      notApplicableStepIds: only ? running.filter((id) => !stepIds.includes(id)) : [],
    };
  });
}

/** The plan from what deployments.plan holds (either form); null stays null. */
export function fromStoredPlan(value: unknown): Plan | null {
  if (value === null || value === undefined) return null;
  const stored = value as StoredPlan | Plan;
  if (!('v' in stored)) return stored;
  // A newer Gantry's form: refused plainly rather than read as something it is not.
  if (stored.v !== VERSION)
    throw new Error(`The deployment's plan is stored in form ${String(stored.v)}, unknown here`);
  const stages: Stage[] = stored.stages.map((stage) =>
    stage.kind === 'Step'
      ? { ...stage, targets: plannedMachines(stage.targets) }
      : { ...stage, machines: rollingMachines(stage) },
  );
  return { environmentId: stored.environmentId, stages };
}
