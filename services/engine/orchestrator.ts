/**
 * The orchestrator: moves one deployment through its states (contract §5) by reading the truth
 * from PostgreSQL, asking the pure planner/scheduler what to do, and writing the outcome back.
 *
 * `advance(id)` is idempotent and safe on any replica: it runs only while this replica holds the
 * deployment's short lease, and every task transition is guarded in SQL (Pending → Running
 * happens once), so two replicas, a redelivered message or a crash in the middle never start a
 * step twice. Agents are woken through the bus; they pull their tasks from the database.
 */
import type { Clock, Logger, ReleaseSnapshot } from '../core/index.ts';
import { newId } from '../core/index.ts';
import type { Bus } from '../bus/index.ts';
import { EventSubject } from '../bus/index.ts';
import type { Deployment, DeploymentTask, LogLevel, NewLogEntry, Store } from '../store/index.ts';
import { isOnline, toPlanInput } from './plan-input.ts';
import { planDeployment, planTargets } from './planner.ts';
import { nextActions } from './scheduler.ts';
import { targetKey, type Plan, type Stage, type TargetStatus } from './plan-types.ts';

export interface OrchestratorTiming {
  /** How long one replica may hold a deployment before another may take it over. */
  leaseMs: number;
  /** A running task whose agent has not been seen for this long fails ("lost contact"). */
  agentLostMs: number;
  /** After a cancel, running tasks whose agent does not confirm within this time are marked Cancelled. */
  cancelGraceMs: number;
}

export const DEFAULT_TIMING: OrchestratorTiming = { leaseMs: 15_000, agentLostMs: 120_000, cancelGraceMs: 30_000 };

export interface OrchestratorDeps {
  store: Store;
  clock: Clock;
  bus: Bus;
  logger: Logger;
  replicaId: string;
  timing: OrchestratorTiming;
  /** Called once a deployment reaches Completed or Failed: frees slots, triggers automatic phases. */
  onFinished(deployment: Deployment): Promise<void>;
}

export type AdvanceResult = 'done' | 'busy';

const stepParentLogId = (deploymentId: string, stepId: string) => `${deploymentId}.${stepId}`;

export class Orchestrator {
  readonly #deps: OrchestratorDeps;

  constructor(deps: OrchestratorDeps) {
    this.#deps = deps;
  }

  /** Drives the deployment as far as it can go now. 'busy': another replica holds it; try later. */
  async advance(deploymentId: string): Promise<AdvanceResult> {
    const { store, clock, replicaId, timing } = this.#deps;
    const now = clock.now();
    const claimed = await store.deployments.claim(deploymentId, replicaId, now, new Date(now.getTime() + timing.leaseMs));
    if (!claimed) {
      const current = await store.deployments.get(deploymentId);
      return current && !['Completed', 'Failed', 'Cancelled'].includes(current.status) ? 'busy' : 'done';
    }
    try {
      let deployment: Deployment | null = claimed;
      // Each pass moves at most one state forward; loop until nothing changes.
      for (let pass = 0; deployment && pass < 6; pass++) {
        const before = deployment.status;
        await this.#step(deployment);
        deployment = await store.deployments.get(deploymentId);
        if (!deployment || deployment.status === before) break;
      }
      return 'done';
    } finally {
      await store.deployments.releaseLease(deploymentId, replicaId);
    }
  }

  async #step(deployment: Deployment): Promise<void> {
    if (deployment.cancellationRequestedUtc) return this.#cancel(deployment);
    switch (deployment.status) {
      case 'Queued':
        if (deployment.scheduledFor && deployment.scheduledFor > this.#deps.clock.now()) return;
        return this.#setStatus(deployment, 'Validating', 'Validating the deployment');
      case 'Validating':
        return this.#validate(deployment);
      case 'AwaitingSlot':
        return this.#acquireSlot(deployment);
      case 'Running':
        return this.#run(deployment);
      case 'Completed':
      case 'Failed':
      case 'Cancelled':
        return;
    }
  }

  async #log(deploymentId: string, entries: NewLogEntry[]): Promise<void> {
    const now = this.#deps.clock.now();
    await this.#deps.store.deploymentLogs.append(deploymentId, entries, now);
  }

  async #setStatus(deployment: Deployment, status: Deployment['status'], message: string, level: LogLevel = 'Information'): Promise<void> {
    const now = this.#deps.clock.now();
    const final = status === 'Completed' || status === 'Failed' || status === 'Cancelled';
    await this.#deps.store.deployments.update(
      deployment.id,
      { status, ...(status === 'Running' ? { startedUtc: now } : {}), ...(final ? { completedUtc: now } : {}), lastAttemptUtc: now },
      now,
    );
    await this.#log(deployment.id, [{ level, data: message }]);
    await this.#deps.bus.publishEvent(EventSubject.deploymentChanged(deployment.id), { v: 1, type: 'deployment.changed', deploymentId: deployment.id, status });
    this.#deps.logger.info({ deploymentId: deployment.id, status }, 'deployment status changed');
  }

  async #snapshot(deployment: Deployment): Promise<ReleaseSnapshot | null> {
    const release = await this.#deps.store.releases.get(deployment.releaseId);
    return release?.snapshot ?? null;
  }

  /** Validating: resolve targets into a plan and store one task per step × machine. */
  async #validate(deployment: Deployment): Promise<void> {
    const { store, clock } = this.#deps;
    const snapshot = await this.#snapshot(deployment);
    if (!snapshot) return this.#setStatus(deployment, 'Failed', 'The release or its project no longer exists', 'Error');
    const organization = await store.deployments.organizationLimits(deployment.workspaceId);
    const machines = await store.deploymentMachines.listInEnvironment(deployment.environmentId);
    const plan = planDeployment(toPlanInput(snapshot, deployment, machines, { maxParallelMachines: organization.maxParallelMachines }, clock.now()));
    const tasks = planTargets(plan).map((t) => ({ id: newId(), deploymentId: deployment.id, stageIndex: t.stageIndex, stepId: t.stepId, stepName: stepName(plan.stages[t.stageIndex], t.stepId), machineId: t.machineId, machineName: t.machineName }));
    await store.transaction(async (tx) => {
      await tx.deploymentTasks.insertMany(tasks);
      await tx.deployments.update(deployment.id, { plan, status: 'AwaitingSlot' }, clock.now());
    });
    const lines: NewLogEntry[] = [{ level: 'Information', data: `Planned ${tasks.length} step × machine target(s) on ${machines.length} machine(s) in '${deployment.environmentName}'` }];
    for (const stage of plan.stages) lines.push(...skipLines(deployment.id, stage));
    await this.#log(deployment.id, lines);
  }

  /** AwaitingSlot: one running deployment per project and environment, and the organization's cap. */
  async #acquireSlot(deployment: Deployment): Promise<void> {
    const { store, clock } = this.#deps;
    const started = await store.deployments.tryStart(deployment, clock.now());
    if (started) {
      await this.#log(deployment.id, [{ level: 'Information', data: `Deploying release to '${deployment.environmentName}'` }]);
      await this.#deps.bus.publishEvent(EventSubject.deploymentChanged(deployment.id), { v: 1, type: 'deployment.changed', deploymentId: deployment.id, status: 'Running' });
    }
  }

  /** Running: start what the scheduler allows, record skips, finish when the plan is done. */
  async #run(deployment: Deployment): Promise<void> {
    const { store, clock, timing } = this.#deps;
    const plan = (await store.deployments.getPlan(deployment.id)) as Plan | null;
    if (!plan) return this.#setStatus(deployment, 'Failed', 'The deployment has no plan', 'Error');
    const now = clock.now();
    let tasks = await store.deploymentTasks.listForDeployment(deployment.id);
    await this.#failLostTasks(tasks, now, timing.agentLostMs);
    tasks = await store.deploymentTasks.listForDeployment(deployment.id);
    const byKey = new Map(tasks.map((t) => [targetKey(t.stepId, t.machineId ?? ''), t]));
    const statuses = new Map<string, TargetStatus>(tasks.map((t) => [targetKey(t.stepId, t.machineId ?? ''), t.status]));
    const actions = nextActions(plan, statuses);

    for (const skip of actions.skip) {
      const task = byKey.get(targetKey(skip.stepId, skip.machineId));
      if (task && (await store.deploymentTasks.transition(task.id, ['Pending'], { status: 'Skipped', message: skip.message, finishedUtc: now }))) {
        await this.#ensureStepParent(deployment.id, task);
        await this.#log(deployment.id, [{ level: 'Information', data: `${task.stepName} on ${task.machineName}: ${skip.message}`, stepId: task.stepId, parentLogId: stepParentLogId(deployment.id, task.stepId) }]);
      }
    }
    // Starts are claimed together (each Pending → Running is guarded on its own) and logged in one
    // append, then every agent is woken: a per-task round of writes before the first wake-up made
    // the first machine wait for the last one (~8 ms × machines).
    const claimed = await Promise.all(
      actions.start.map(async (start) => {
        const task = byKey.get(targetKey(start.stepId, start.machineId));
        if (!task) return null;
        const machine = await store.deploymentMachines.get(start.machineId);
        const parentLogId = newId();
        if (!(await store.deploymentTasks.transition(task.id, ['Pending'], { status: 'Running', parentLogId, dispatchedUtc: now, startedUtc: now }))) return null;
        return { task, machine, parentLogId, machineId: start.machineId };
      }),
    );
    const started = claimed.filter((c) => c !== null);
    const parents = new Map(started.map((s) => [s.task.stepId, s.task]));
    for (const task of parents.values()) await this.#ensureStepParent(deployment.id, task);
    await this.#log(
      deployment.id,
      started.map(({ task, parentLogId }) => ({ id: parentLogId, level: 'Information' as const, data: `Running '${task.stepName}' on ${task.machineName}`, stepId: task.stepId, parentLogId: stepParentLogId(deployment.id, task.stepId), taskId: task.id })),
    );
    const woken = new Set<string>();
    for (const { task, machine, machineId } of started) {
      if (!machine || !machine.enabled || !isOnline(machine, now)) {
        // No hang: an offline machine fails its part at once, saying so.
        await this.finishTask(task.id, { status: 'Failed', exitCode: null, message: `Machine '${task.machineName}' is offline: its agent has not connected recently` });
        continue;
      }
      woken.add(machineId);
    }
    for (const machineId of woken) {
      await this.#deps.bus.publishEvent(EventSubject.machineWorkAvailable(machineId), { v: 1, type: 'machine.work-available', machineId });
    }
    if (actions.start.length > 0 && woken.size === 0) {
      // Only offline failures happened: evaluate again right away with the new statuses.
      return this.#run(deployment);
    }
    if (actions.deploymentOutcome) {
      const failed = actions.deploymentOutcome.status === 'Failed';
      const current = await store.deployments.get(deployment.id);
      const errors = current?.errorCount ?? 0;
      await this.#setStatus(
        deployment,
        failed ? 'Failed' : 'Completed',
        failed ? 'The deployment failed' : errors > 0 ? `The deployment completed with ${errors} error(s)` : 'The deployment completed successfully',
        failed ? 'Error' : 'Information',
      );
      await this.#deps.onFinished(deployment);
    }
  }

  async #ensureStepParent(deploymentId: string, task: DeploymentTask): Promise<void> {
    const id = stepParentLogId(deploymentId, task.stepId);
    if (await this.#deps.store.deploymentLogs.exists(id)) return;
    await this.#log(deploymentId, [{ id, level: 'Information', data: `Step '${task.stepName}'`, stepId: task.stepId }]);
  }

  async #failLostTasks(tasks: DeploymentTask[], now: Date, lostMs: number): Promise<void> {
    for (const task of tasks.filter((t) => t.status === 'Running' && t.machineId)) {
      const dispatched = task.dispatchedUtc?.getTime() ?? now.getTime();
      // Dispatched recently: not lost whatever the agent's last-seen time. Skipping the lookup
      // keeps each wake-up of a wide deployment from reading every machine again.
      if (now.getTime() - dispatched <= lostMs) continue;
      const machine = await this.#deps.store.deploymentMachines.get(task.machineId!);
      const lastSeen = machine?.lastSeenUtc?.getTime() ?? 0;
      if (now.getTime() - Math.max(lastSeen, dispatched) > lostMs) {
        await this.finishTask(task.id, { status: 'Failed', exitCode: null, message: `Lost contact with the agent on '${task.machineName}'` });
      }
    }
  }

  /** Cancel from any non-final state: pending work is dropped, running scripts are stopped by their agents. */
  async #cancel(deployment: Deployment): Promise<void> {
    const { store, clock, bus, timing } = this.#deps;
    const now = clock.now();
    const tasks = await store.deploymentTasks.listForDeployment(deployment.id);
    for (const task of tasks.filter((t) => t.status === 'Pending')) {
      await store.deploymentTasks.transition(task.id, ['Pending'], { status: 'Cancelled', message: 'Cancelled before it started', finishedUtc: now });
    }
    const running = tasks.filter((t) => t.status === 'Running');
    const graceOver = now.getTime() - (deployment.cancellationRequestedUtc?.getTime() ?? now.getTime()) > timing.cancelGraceMs;
    for (const task of running) {
      if (graceOver) {
        await this.finishTask(task.id, { status: 'Cancelled', exitCode: null, message: `The agent on '${task.machineName}' did not confirm the cancellation in time` });
      } else if (task.machineId) {
        await bus.publishEvent(EventSubject.taskCancel(task.id), { v: 1, type: 'task.cancel', taskId: task.id, deploymentId: deployment.id, machineId: task.machineId });
      }
    }
    const stillRunning = (await store.deploymentTasks.listForDeployment(deployment.id)).some((t) => t.status === 'Running');
    if (!stillRunning) {
      await this.#setStatus(deployment, 'Cancelled', 'The deployment was cancelled', 'Warning');
      await this.#deps.onFinished(deployment);
    }
  }

  /**
   * Records the end of a task (from its agent, or decided here) exactly once, with its log line.
   * Returns false when the task had already finished.
   */
  async finishTask(
    taskId: string,
    result: { status: 'Succeeded' | 'Failed' | 'Cancelled'; exitCode: number | null; message: string },
  ): Promise<boolean> {
    const { store, clock } = this.#deps;
    const task = await store.deploymentTasks.get(taskId);
    if (!task) return false;
    const now = clock.now();
    const changed = await store.deploymentTasks.transition(taskId, ['Running'], { status: result.status, exitCode: result.exitCode, message: result.message, finishedUtc: now });
    if (!changed) return false;
    const plan = (await store.deployments.getPlan(task.deploymentId)) as Plan | null;
    const errorAction = plan ? errorActionOf(plan, task.stepId) : 'Stop';
    const level: LogLevel = result.status === 'Succeeded' ? 'Information' : result.status === 'Cancelled' ? 'Warning' : errorAction === 'Continue' ? 'Warning' : 'Error';
    await this.#log(task.deploymentId, [{ level, data: `${task.stepName} on ${task.machineName}: ${result.message}`, stepId: task.stepId, parentLogId: task.parentLogId, taskId: task.id }]);
    return true;
  }
}

function stepName(stage: Stage | undefined, stepId: string): string {
  if (!stage) return stepId;
  if (stage.kind === 'Step') return stage.name;
  return stage.members.find((m) => m.stepId === stepId)?.name ?? stepId;
}

function errorActionOf(plan: Plan, stepId: string): string {
  for (const stage of plan.stages) {
    if (stage.kind === 'Step' && stage.stepId === stepId) return stage.errorAction;
    if (stage.kind === 'RollingGroup') {
      const member = stage.members.find((m) => m.stepId === stepId);
      if (member) return member.errorAction;
    }
  }
  return 'Stop';
}

/** Log lines for what the plan already knows will not run (the planner's messages are sentences). */
function skipLines(deploymentId: string, stage: Stage): NewLogEntry[] {
  if (stage.kind === 'Step') {
    return stage.skip ? [{ id: stepParentLogId(deploymentId, stage.stepId), level: stage.skip.level, data: stage.skip.message, stepId: stage.stepId }] : [];
  }
  const lines: NewLogEntry[] = [];
  for (const member of stage.members) {
    if (member.skip) {
      lines.push({ id: stepParentLogId(deploymentId, member.stepId), level: member.skip.level, data: member.skip.message, stepId: member.stepId });
      continue;
    }
    if (!stage.noTargets) continue;
    // Counted as the outcome counts it: a Fail is an error unless the step only warns on failure.
    const level: LogLevel =
      stage.noTargets === 'Skip' ? 'Information' : stage.noTargets === 'Warn' || member.errorAction === 'Continue' ? 'Warning' : 'Error';
    const what = stage.noTargets === 'Fail' ? 'fails' : 'is skipped';
    lines.push({ level, data: `Step '${member.name}' of rolling group '${stage.name}' ${what}: no machine matches any step of the group`, stepId: member.stepId });
  }
  return lines;
}
