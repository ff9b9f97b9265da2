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

/** Reads a target's status (missing = Pending). */
interface StatusReader {
  status(stepId: string, machineId: string): TaskStatus;
}

/** Decisions accumulate on a private copy of the statuses, so later rules see earlier ones. */
class Working implements StatusReader {
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

function isStageDone(stage: Stage, w: StatusReader): boolean {
  // Without listing the targets first: a stage in progress answers at its first unfinished one.
  if (stage.kind === 'Step') return stage.targets.every((t) => isTerminal(w.status(stage.stepId, t.machineId)));
  return stage.machines.every((m) => m.stepIds.every((s) => isTerminal(w.status(s, m.machineId))));
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
function stopFailures(stage: Stage, w: StatusReader): string[] {
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

/**
 * The same answers as nextActions, kept up to date change by change, so a refill of a wide
 * deployment costs the window, not the fleet: nextActions walks every target of the plan (10,000
 * machines: every refill of every slot). This keeps a cursor on the stage that is running — the
 * machines in progress, where the next unstarted one is, how many targets are not final — and
 * answers from it; whenever a stage may end (or a change falls outside it) it asks nextActions
 * itself and builds the cursor again, which happens a few times per deployment.
 * Equivalence is checked change by change against nextActions in incremental-scheduler.test.ts.
 */
export class IncrementalScheduler implements StatusReader {
  readonly #plan: Plan;
  readonly #statuses: Map<string, TaskStatus>;
  #cursor: StageCursor | null = null;

  /** Takes `statuses` over: from now on it changes only through set(). */
  constructor(plan: Plan, statuses: Map<string, TaskStatus>) {
    this.#plan = plan;
    this.#statuses = statuses;
  }

  status(stepId: string, machineId: string): TaskStatus {
    return this.#statuses.get(targetKey(stepId, machineId)) ?? TaskStatus.Pending;
  }

  set(stepId: string, machineId: string, status: TaskStatus): void {
    const key = targetKey(stepId, machineId);
    const before = this.#statuses.get(key) ?? TaskStatus.Pending;
    if (before === status) return;
    this.#statuses.set(key, status);
    if (this.#cursor && !this.#cursor.changed(stepId, machineId, before, status, this.#statuses)) this.#cursor = null;
  }

  next(): NextActions {
    this.#cursor ??= this.#build();
    const answer = this.#cursor?.advance(this.#statuses);
    if (!answer) {
      // A stage may end here (or there is no running stage): the full rules decide, once.
      this.#cursor = null;
      return nextActions(this.#plan, this.#statuses);
    }
    return answer;
  }

  /** A cursor on the stage nextActions would stop at, when every stage before it ended without a Stop failure. */
  #build(): StageCursor | null {
    // Read in place: building the cursor decides nothing (a copy of 10,000 statuses would be the most of it).
    for (const [index, stage] of this.#plan.stages.entries()) {
      if (!isStageDone(stage, this))
        return stage.kind === 'Step'
          ? new StepCursor(index, stage, this.#statuses)
          : RollingCursor.create(index, stage, this.#statuses);
      if (stopFailures(stage, this).length > 0) return null;
    }
    return null;
  }
}

const finishedBefore = (index: number): number[] => Array.from({ length: index }, (_, i) => i);

interface StageCursor {
  /** Folds in a change (`statuses` already holds it); false when the target is not this stage's (the cursor is then dropped). */
  changed(
    stepId: string,
    machineId: string,
    before: TaskStatus,
    after: TaskStatus,
    statuses: ReadonlyMap<string, TaskStatus>,
  ): boolean;
  /** nextActions' answer, or null when the stage may end with it (nextActions must decide). */
  advance(statuses: ReadonlyMap<string, TaskStatus>): NextActions | null;
}

class StepCursor implements StageCursor {
  readonly #index: number;
  readonly #stage: StepStage;
  readonly #positions: Map<string, number>;
  /** Every target before it has left Pending. */
  #next = 0;
  #running = 0;
  #unfinished = 0;

  constructor(index: number, stage: StepStage, statuses: ReadonlyMap<string, TaskStatus>) {
    this.#index = index;
    this.#stage = stage;
    this.#positions = new Map(stage.targets.map((t, i) => [t.machineId, i]));
    // Nothing but Pending (a deployment being validated): no key to build per target.
    if (statuses.size === 0) {
      this.#unfinished = stage.targets.length;
      return;
    }
    for (const t of stage.targets) {
      const status = statuses.get(targetKey(stage.stepId, t.machineId)) ?? TaskStatus.Pending;
      if (status === TaskStatus.Running) this.#running++;
      if (!isTerminal(status)) this.#unfinished++;
    }
  }

  changed(stepId: string, machineId: string, before: TaskStatus, after: TaskStatus): boolean {
    if (stepId !== this.#stage.stepId || !this.#positions.has(machineId)) return false;
    this.#running += Number(after === TaskStatus.Running) - Number(before === TaskStatus.Running);
    this.#unfinished += Number(!isTerminal(after)) - Number(!isTerminal(before));
    return true;
  }

  advance(statuses: ReadonlyMap<string, TaskStatus>): NextActions | null {
    if (this.#unfinished === 0) return null;
    const { stepId, targets, parallelism } = this.#stage;
    const pending = (i: number) =>
      (statuses.get(targetKey(stepId, targets[i]!.machineId)) ?? TaskStatus.Pending) === TaskStatus.Pending;
    while (this.#next < targets.length && !pending(this.#next)) this.#next++;
    const start: StartAction[] = [];
    let running = this.#running;
    for (let i = this.#next; i < targets.length && running < parallelism; i++) {
      if (!pending(i)) continue;
      start.push({ stageIndex: this.#index, stepId, machineId: targets[i]!.machineId });
      running++;
    }
    return { start, skip: [], finishedStages: finishedBefore(this.#index) };
  }
}

class RollingCursor implements StageCursor {
  readonly #index: number;
  readonly #stage: RollingStage;
  readonly #positions: Map<string, number>;
  /**
   * The stage's statuses by position: member k of machine i at [i][k]. Read once from the shared
   * map and kept by changed(), so a refill reads numbers, not a string key per member and check
   * (four per machine in progress, every refill; 10,000 of them to build the cursor).
   */
  readonly #status: TaskStatus[][];
  /** More than any machine's member count: advance() keys member k of machine i as i × width + k. */
  readonly #width: number;
  /** Machines started and not done, by plan position. */
  readonly #active = new Set<number>();
  readonly #started: boolean[];
  readonly #failed: boolean[];
  #failedMachines = 0;
  /** Every machine before it has started. */
  #next = 0;
  #unfinished = 0;

  /** Null when the machines are not in rank order (the start rule below relies on it). */
  static create(index: number, stage: RollingStage, statuses: ReadonlyMap<string, TaskStatus>): RollingCursor | null {
    for (let i = 1; i < stage.machines.length; i++)
      if (stage.machines[i]!.rank < stage.machines[i - 1]!.rank) return null;
    return new RollingCursor(index, stage, statuses);
  }

  private constructor(index: number, stage: RollingStage, statuses: ReadonlyMap<string, TaskStatus>) {
    this.#index = index;
    this.#stage = stage;
    this.#positions = new Map(stage.machines.map((m, i) => [m.machineId, i]));
    // Nothing stored yet (a deployment being validated): every target is Pending, and 10,000 keys
    // built only to miss would be most of the cursor's cost.
    const read =
      statuses.size === 0
        ? () => TaskStatus.Pending
        : (s: string, machineId: string) => statuses.get(targetKey(s, machineId)) ?? TaskStatus.Pending;
    this.#status = stage.machines.map((m) => m.stepIds.map((s) => read(s, m.machineId)));
    this.#width = 1 + this.#status.reduce((widest, members) => Math.max(widest, members.length), 0);
    this.#started = stage.machines.map(() => false);
    this.#failed = stage.machines.map(() => false);
    this.#status.forEach((members, i) => {
      for (const status of members) if (!isTerminal(status)) this.#unfinished++;
      this.#refresh(i);
    });
  }

  #refresh(i: number): void {
    const members = this.#status[i]!;
    const started = members.some((st) => st !== TaskStatus.Pending);
    const done = members.every(isTerminal);
    const failed = members.some(isFailure);
    this.#started[i] = started;
    if (failed !== this.#failed[i]) this.#failedMachines += failed ? 1 : -1;
    this.#failed[i] = failed;
    if (started && !done) this.#active.add(i);
    else this.#active.delete(i);
  }

  changed(stepId: string, machineId: string, before: TaskStatus, after: TaskStatus): boolean {
    const i = this.#positions.get(machineId);
    const k = i === undefined ? -1 : this.#stage.machines[i]!.stepIds.indexOf(stepId);
    if (i === undefined || k < 0) return false;
    this.#status[i]![k] = after;
    this.#unfinished += Number(!isTerminal(after)) - Number(!isTerminal(before));
    this.#refresh(i);
    return true;
  }

  advance(): NextActions | null {
    if (this.#unfinished === 0) return null;
    const g = this.#stage;
    const index = this.#index;
    // This pass's decisions, on top of the stored statuses (nextActions' Working, for the window only).
    const width = this.#width;
    const overlay = new Map<number, TaskStatus>();
    const st = (i: number, k: number): TaskStatus => overlay.get(i * width + k) ?? this.#status[i]![k]!;
    const start: StartAction[] = [];
    const skip: SkipAction[] = [];
    const begin = (i: number, k: number) => {
      overlay.set(i * width + k, TaskStatus.Running);
      start.push({ stageIndex: index, stepId: g.machines[i]!.stepIds[k]!, machineId: g.machines[i]!.machineId });
    };
    let passed = 0;
    const pass = (i: number, k: number, reason: TargetSkipReason, message: string) => {
      overlay.set(i * width + k, TaskStatus.Skipped);
      skip.push({
        stageIndex: index,
        stepId: g.machines[i]!.stepIds[k]!,
        machineId: g.machines[i]!.machineId,
        reason,
        message,
      });
      passed++;
    };
    const members = (i: number) => g.machines[i]!.stepIds.keys();
    const active = [...this.#active].sort((a, b) => a - b);
    // A failed machine is started; one with a pending member is not done: it is in `active`.
    if (g.onMemberFailure === OnMemberFailure.SkipRestOnThisMachine) {
      for (const i of active) {
        if (!this.#failed[i]) continue;
        for (const k of members(i))
          if (st(i, k) === TaskStatus.Pending)
            pass(
              i,
              k,
              TargetSkipReason.EarlierMemberFailed,
              `Skipped on ${g.machines[i]!.machineName}: an earlier step of rolling group "${g.name}" failed on this machine.`,
            );
      }
    }
    while (this.#next < g.machines.length && this.#started[this.#next]) this.#next++;
    if (g.onMachineFailure === OnMachineFailure.StopStep && this.#failedMachines > 0) {
      for (let i = this.#next; i < g.machines.length; i++) {
        if (this.#started[i]) continue;
        for (const k of members(i))
          pass(
            i,
            k,
            TargetSkipReason.GroupStopped,
            `Skipped on ${g.machines[i]!.machineName}: another machine failed in rolling group "${g.name}".`,
          );
      }
    }
    let count = 0;
    let lowestRankInProgress = Infinity;
    for (const i of active) {
      const statuses = [...members(i)].map((k) => st(i, k));
      if (statuses.every(isTerminal)) continue;
      count++;
      lowestRankInProgress = Math.min(lowestRankInProgress, g.machines[i]!.rank);
      const busy = statuses.includes(TaskStatus.Running);
      const next = statuses.indexOf(TaskStatus.Pending);
      if (!busy && next >= 0) begin(i, next);
    }
    for (let i = this.#next; i < g.machines.length && count < g.windowSize; i++) {
      const m = g.machines[i]!;
      if ([...members(i)].some((k) => st(i, k) !== TaskStatus.Pending)) continue;
      // Machines are in rank order: an unstarted one of a lower rank would have come first.
      if (g.waitBetweenMachineGroups && lowestRankInProgress < m.rank) break;
      if (m.stepIds.length === 0) continue;
      begin(i, 0);
      count++;
      lowestRankInProgress = Math.min(lowestRankInProgress, m.rank);
    }
    if (this.#unfinished - passed === 0) return null;
    return { start, skip, finishedStages: finishedBefore(index) };
  }
}
