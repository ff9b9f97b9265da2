/**
 * The scheduling policy: given a plan and the status of every target, what starts now, what is
 * skipped, and whether the deployment is over. Pure and idempotent, so any control-plane replica
 * can call it again after a crash and reach the same decision. Cancellation is the orchestrator's.
 */
import {
  TargetSkipReason,
  targetKey,
  type DeploymentOutcome,
  type NextActions,
  type OutcomeIssue,
  type Plan,
  type RollingMachine,
  type RollingStage,
  type SkipAction,
  type StartAction,
  type Stage,
  type StepStage,
  type TargetStatuses,
} from './plan-types.ts';
import { ErrorAction, OnMachineFailure, OnMemberFailure, OnNoTargets, TaskStatus } from '../core/index.ts';

function isTerminal(status: TaskStatus): boolean {
  return status !== TaskStatus.Pending && status !== TaskStatus.Running;
}

/** A cancelled target counts as failed for every policy: it did not do its work. */
function isFailure(status: TaskStatus): boolean {
  return status === TaskStatus.Failed || status === TaskStatus.Cancelled;
}

/** Decisions accumulate on a private copy of the statuses, so later rules see earlier ones. */
class Working {
  readonly start: StartAction[] = [];
  readonly skip: SkipAction[] = [];
  private readonly statuses: Map<string, TaskStatus>;
  constructor(state: TargetStatuses) {
    this.statuses = new Map(state);
  }
  status(stepId: string, machineId: string): TaskStatus {
    return this.statuses.get(targetKey(stepId, machineId)) ?? TaskStatus.Pending;
  }
  begin(stageIndex: number, stepId: string, machineId: string): void {
    this.statuses.set(targetKey(stepId, machineId), TaskStatus.Running);
    this.start.push({ stageIndex, stepId, machineId });
  }
  pass(stageIndex: number, stepId: string, machineId: string, reason: TargetSkipReason, message: string): void {
    this.statuses.set(targetKey(stepId, machineId), TaskStatus.Skipped);
    this.skip.push({ stageIndex, stepId, machineId, reason, message });
  }
}

interface Target {
  stepId: string;
  machineId: string;
}

function stageTargets(stage: Stage): Target[] {
  if (stage.kind === 'Step') return stage.targets.map((t) => ({ stepId: stage.stepId, machineId: t.machineId }));
  return stage.machines.flatMap((m) => m.stepIds.map((stepId) => ({ stepId, machineId: m.machineId })));
}

function isStageDone(stage: Stage, w: Working): boolean {
  return stageTargets(stage).every((t) => isTerminal(w.status(t.stepId, t.machineId)));
}

/** A plain step runs on all its targets at once, at most `parallelism` at a time. */
function advanceStep(index: number, stage: StepStage, w: Working): void {
  let running = stage.targets.filter((t) => w.status(stage.stepId, t.machineId) === TaskStatus.Running).length;
  for (const t of stage.targets) {
    if (running >= stage.parallelism) break;
    if (w.status(stage.stepId, t.machineId) !== TaskStatus.Pending) continue;
    w.begin(index, stage.stepId, t.machineId);
    running += 1;
  }
}

const machineStarted = (m: RollingMachine, w: Working): boolean =>
  m.stepIds.some((s) => w.status(s, m.machineId) !== TaskStatus.Pending);
const machineDone = (m: RollingMachine, w: Working): boolean =>
  m.stepIds.every((s) => isTerminal(w.status(s, m.machineId)));
const machineFailed = (m: RollingMachine, w: Working): boolean =>
  m.stepIds.some((s) => isFailure(w.status(s, m.machineId)));

/**
 * A rolling group: each machine runs its members in order; up to windowSize machines are in
 * progress at once; machines start in plan order (and rank by rank with waitBetweenMachineGroups).
 */
function advanceGroup(index: number, g: RollingStage, w: Working): void {
  if (g.onMemberFailure === OnMemberFailure.SkipRestOnThisMachine) {
    for (const m of g.machines.filter((m) => machineFailed(m, w))) {
      for (const stepId of m.stepIds.filter((s) => w.status(s, m.machineId) === TaskStatus.Pending)) {
        w.pass(
          index,
          stepId,
          m.machineId,
          TargetSkipReason.EarlierMemberFailed,
          `Skipped on ${m.machineName}: an earlier step of rolling group "${g.name}" failed on this machine.`,
        );
      }
    }
  }
  const stopped = g.onMachineFailure === OnMachineFailure.StopStep && g.machines.some((m) => machineFailed(m, w));
  if (stopped) {
    // Machines already in progress finish the group; no other machine starts.
    for (const m of g.machines.filter((m) => !machineStarted(m, w))) {
      for (const stepId of m.stepIds) {
        w.pass(
          index,
          stepId,
          m.machineId,
          TargetSkipReason.GroupStopped,
          `Skipped on ${m.machineName}: another machine failed in rolling group "${g.name}".`,
        );
      }
    }
  }
  let active = 0;
  for (const m of g.machines) {
    if (!machineStarted(m, w) || machineDone(m, w)) continue;
    active += 1;
    const busy = m.stepIds.some((s) => w.status(s, m.machineId) === TaskStatus.Running);
    const next = m.stepIds.find((s) => w.status(s, m.machineId) === TaskStatus.Pending);
    if (!busy && next !== undefined) w.begin(index, next, m.machineId);
  }
  for (const m of g.machines) {
    if (active >= g.windowSize) break;
    if (machineStarted(m, w)) continue;
    // Plan order is rank order, so the first blocked machine blocks every later one too.
    if (g.waitBetweenMachineGroups && g.machines.some((o) => o.rank < m.rank && !machineDone(o, w))) break;
    const first = m.stepIds[0];
    if (first === undefined) continue;
    w.begin(index, first, m.machineId);
    active += 1;
  }
}

/** errorAction Stop steps that failed in this stage (so later stages must not start). */
function stopFailures(stage: Stage, w: Working): string[] {
  if (stage.kind === 'Step') {
    const failed =
      stage.errorAction === ErrorAction.Stop &&
      stage.targets.some((t) => isFailure(w.status(stage.stepId, t.machineId)));
    return failed ? [stage.stepId] : [];
  }
  return stage.members
    .filter((member) => member.skip === null && member.errorAction === ErrorAction.Stop)
    .filter(
      (member) =>
        stage.noTargets === OnNoTargets.Fail ||
        stage.machines.some(
          (m) => m.stepIds.includes(member.stepId) && isFailure(w.status(member.stepId, m.machineId)),
        ),
    )
    .map((member) => member.stepId);
}

function issuesOf(stage: Stage, w: Working, errors: OutcomeIssue[], warnings: OutcomeIssue[]): void {
  const failure = (errorAction: ErrorAction, issue: OutcomeIssue): void => {
    (errorAction === ErrorAction.Continue ? warnings : errors).push(issue);
  };
  if (stage.kind === 'Step') {
    if (stage.skip?.level === 'Warning')
      warnings.push({ stepId: stage.stepId, machineId: null, kind: 'NoMatchingMachine' });
    for (const t of stage.targets) {
      if (isFailure(w.status(stage.stepId, t.machineId)))
        failure(stage.errorAction, { stepId: stage.stepId, machineId: t.machineId, kind: 'TargetFailed' });
    }
    return;
  }
  for (const member of stage.members.filter((m) => m.skip === null)) {
    if (stage.noTargets === OnNoTargets.Warn)
      warnings.push({ stepId: member.stepId, machineId: null, kind: 'NoTargets' });
    if (stage.noTargets === OnNoTargets.Fail)
      failure(member.errorAction, { stepId: member.stepId, machineId: null, kind: 'NoTargets' });
    for (const m of stage.machines) {
      if (m.stepIds.includes(member.stepId) && isFailure(w.status(member.stepId, m.machineId))) {
        failure(member.errorAction, { stepId: member.stepId, machineId: m.machineId, kind: 'TargetFailed' });
      }
    }
  }
}

/**
 * What to do now. Stages run strictly in order: a stage starts once every earlier one is done.
 * After a Stop step fails, the stage it is in still finishes; every later target is skipped.
 */
export function nextActions(plan: Plan, state: TargetStatuses): NextActions {
  const w = new Working(state);
  const finishedStages: number[] = [];
  const stopped: string[] = [];
  for (const [index, stage] of plan.stages.entries()) {
    if (stopped.length > 0) {
      for (const t of stageTargets(stage)) {
        if (w.status(t.stepId, t.machineId) === TaskStatus.Pending) {
          w.pass(
            index,
            t.stepId,
            t.machineId,
            TargetSkipReason.DeploymentFailed,
            'Skipped: an earlier step failed and stopped the deployment.',
          );
        }
      }
      continue;
    }
    if (stage.kind === 'Step') advanceStep(index, stage, w);
    else advanceGroup(index, stage, w);
    if (!isStageDone(stage, w)) return { start: w.start, skip: w.skip, finishedStages };
    finishedStages.push(index);
    stopped.push(...stopFailures(stage, w));
  }
  const errors: OutcomeIssue[] = [];
  const warnings: OutcomeIssue[] = [];
  for (const index of finishedStages) {
    const stage = plan.stages[index];
    if (stage) issuesOf(stage, w, errors, warnings);
  }
  // A later stage never started after a Stop failure; anything still running there would be a
  // bug upstream, so the outcome waits for it rather than report a deployment that is not over.
  const stillRunning = plan.stages.some((s) =>
    stageTargets(s).some((t) => w.status(t.stepId, t.machineId) === TaskStatus.Running),
  );
  if (stillRunning) return { start: w.start, skip: w.skip, finishedStages };
  const deploymentOutcome: DeploymentOutcome = {
    status: stopped.length > 0 ? 'Failed' : 'Completed',
    errorCount: errors.length,
    warningCount: warnings.length,
    errors,
    warnings,
  };
  return { start: w.start, skip: w.skip, finishedStages, deploymentOutcome };
}

/** True once nothing is running and nothing more will start. */
export function isFinished(plan: Plan, state: TargetStatuses): boolean {
  return nextActions(plan, state).deploymentOutcome !== undefined;
}
