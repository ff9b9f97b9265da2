/**
 * The deployment engine of one control-plane replica: consumes "advance" wake-ups, sweeps for
 * deployments nobody drives (scheduled ones that fell due, leases of a dead replica), and
 * serves the agent gateway through the AgentPort.
 */
import type { Clock, Logger, Metrics, SecretBox } from '../core/index.ts';
import {
  BoundedCache,
  CoalescedBatch,
  createMetrics,
  dateToTicks,
  encodeVarints,
  newId,
  toError,
} from '../core/index.ts';
import { WorkQueue, type AdvanceDeploymentMessage, type Bus, type Subscription } from '../bus/index.ts';
import {
  approvalsByPhase,
  automaticEnvironmentsDue,
  computeProgression,
  gateOfNew,
  isDatabaseUnavailable,
  type CreatedDeployment,
} from '../domain/index.ts';
import type {
  Deployment,
  DeploymentTask,
  DispatchedTask,
  NewLogChunk,
  NewLogEntry,
  Release,
  Store,
} from '../store/index.ts';
import type { AgentInfo, AgentLogChunk, AgentPort, ResultReceipt, RunTaskPayload } from './agent-port.ts';
import {
  DEFAULT_TIMING,
  Orchestrator,
  type AdvanceResult,
  type Claimed,
  type OrchestratorTiming,
  type TaskEnd,
  type ValidationKeys,
} from './orchestrator.ts';
import { ProgressWriter } from './progress-writer.ts';
import { createDeploymentChangeHub, type DeploymentChangeHub } from './deployment-changes.ts';
import { buildRunTask, packagesOfStep } from './task-payload.ts';
import { TimedBatch } from './timed-batch.ts';

export interface EngineOptions {
  store: Store;
  clock: Clock;
  bus: Bus;
  secrets: SecretBox;
  logger: Logger;
  /** Identifies this replica in deployment leases. */
  replicaId?: string;
  timing?: Partial<OrchestratorTiming>;
  /** How often this replica looks for deployments nobody drives. */
  sweepIntervalMs?: number;
  /** Counters and histograms of deployments, tasks and log lines; omitted: counted, never served. */
  metrics?: Metrics;
  /** Tasks of a wide deployment inserted per advance beyond what it starts (orchestrator STORE_AHEAD; tests). */
  storeAheadTasks?: number;
  /** Starts committed with a deployment's validation before the rest of its first window (orchestrator DISPATCH_SLICE; tests). */
  firstSliceTasks?: number;
}

export interface Engine {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Asks some replica to advance these deployments now. Never throws: a lost wake-up is swept up. */
  wake(deployments: ReadonlyArray<string | CreatedDeployment>): Promise<void>;
  /**
   * Creates the automatic deployments a release has become due for (contract §5). `stored`: the
   * release just stored, so it is not read back.
   */
  triggerAutomaticDeployments(releaseId: string, stored?: Release): Promise<string[]>;
  agentPort: AgentPort;
  orchestrator: Orchestrator;
  /** Live changes of deployments on every replica, for followers of their events (SSE). */
  changes: DeploymentChangeHub;
}

/**
 * Heartbeats are written, and checked against the machines' running tasks, once per this window
 * for every agent that beat in it: a last-seen time a second late changes nothing (an agent is
 * lost after minutes), and a wake-up the check catches was already lost once.
 */
const HEARTBEAT_BATCH_MS = 1_000;
/** Sessions that ended are recorded together within this: a stopping gateway waits for it. */
const DISCONNECT_BATCH_MS = 100;
/** Hellos and task syncs within this of the last one's statement are answered by the next (CoalescedBatch). */
const CONNECT_BATCH_GAP_MS = 20;

/** A deployment whose advance fails this many times in a row (not for the database being down) ends Failed. */
const ADVANCE_ATTEMPTS = 5;

const noAnswer = (): void => undefined;

const STATUS_BY_OUTCOME = { SUCCEEDED: 'Succeeded', FAILED: 'Failed', CANCELLED: 'Cancelled' } as const;

export function createEngine(options: EngineOptions): Engine {
  const { store, clock, bus, secrets } = options;
  const logger = options.logger.child({ component: 'engine' });
  const replicaId = options.replicaId ?? newId();
  const sweepIntervalMs = options.sweepIntervalMs ?? 2_000;
  const metrics = options.metrics ?? createMetrics();
  let subscription: Subscription | null = null;
  let sweeper: NodeJS.Timeout | null = null;
  /** Deployments this replica is advancing now; `again`: a wake-up arrived meanwhile. */
  const advancing = new Map<string, { again: boolean }>();
  /** Advances started by a task end recorded here (not by the bus): stop() lets them finish. */
  const localAdvances = new Set<Promise<void>>();

  // Best effort by design: PostgreSQL holds the deployment, the bus only wakes. A wake-up that
  // cannot be published (NATS restarting) is logged, and the sweep starts the deployment within
  // sweepIntervalMs — so a committed deploy is never reported as failed because of the bus.
  const wake = async (deployments: ReadonlyArray<string | CreatedDeployment>) => {
    for (const deployment of deployments) {
      const message: AdvanceDeploymentMessage =
        typeof deployment === 'string'
          ? { v: 1, type: 'deployment.advance', deploymentId: deployment }
          : {
              v: 1,
              type: 'deployment.advance',
              deploymentId: deployment.deploymentId,
              validate: {
                releaseId: deployment.releaseId,
                workspaceId: deployment.workspaceId,
                environmentId: deployment.environmentId,
              },
            };
      const { deploymentId } = message;
      try {
        await bus.publishWork(WorkQueue.deployments, message);
      } catch (error) {
        logger.warn({ err: toError(error), deploymentId }, 'wake-up not published; the sweep will pick it up');
      }
    }
  };

  const triggerAutomaticDeployments = async (releaseId: string, stored?: Release): Promise<string[]> => {
    if (stored) releases.remember(releaseId, stored);
    const release = stored ?? (await releaseOf(releaseId));
    // Nothing can be due (the common case): no reads for every deployment that finishes.
    const automatic = release?.snapshot.lifecycle?.phases.some((phase) =>
      phase.environments.some((e) => e.howToTrigger === 'Automatic'),
    );
    if (!release || !automatic) return [];
    const now = clock.now();
    const [environments, history, liveFreezes, phaseApprovals] = await Promise.all([
      store.environments.listAll(release.workspaceId),
      store.deployments.releaseHistory(releaseId),
      store.deploymentFreezes.listLive(release.workspaceId, now),
      approvalsByPhase(store, release),
    ]);
    // A release someone rolled back to is not carried on to later phases by itself: that would
    // undo newer releases there (issue #15). A person may still promote it.
    if (history.rolledBack) {
      logger.info({ releaseId }, 'no automatic deployments: the release was deployed by a rollback');
      return [];
    }
    const progression = computeProgression(
      release.snapshot.lifecycle,
      environments.map((e) => ({ environmentId: e.id, name: e.name, enabled: e.enabled })),
      history.completions,
    );
    const created: string[] = [];
    for (const environmentId of automaticEnvironmentsDue(progression, history.deployedEnvironmentIds)) {
      const environment = environments.find((e) => e.id === environmentId)!;
      const id = newId();
      const inserted = await store.deployments.insertAutomaticOnce(
        {
          id,
          workspaceId: release.workspaceId,
          projectId: release.projectId,
          releaseId,
          environmentId,
          environmentName: environment.name,
          automatic: true,
          excludeStepNames: [],
          machineMode: 'All',
          machineIds: [],
          redownloadPackages: false,
          scheduledFor: null,
          ...gateOfNew(environment, liveFreezes, phaseApprovals),
        },
        now,
      );
      if (inserted) created.push(id);
    }
    if (created.length > 0) {
      logger.info({ releaseId, deploymentIds: created }, 'automatic deployments created');
      await wake(created);
    }
    return created;
  };

  const onFinished = async (deployment: Deployment) => {
    await wake(await store.deployments.listAwaitingSlot(50));
    await triggerAutomaticDeployments(deployment.releaseId);
  };

  // Tasks and releases are looked up on every log batch and dispatch; the fields used here never
  // change once a task is dispatched (a release never changes at all), so replicas may cache them.
  const dispatched = new BoundedCache<DeploymentTask>(10_000);
  const releases = new BoundedCache<Release>(100);
  const dispatchedTask = (taskId: string) =>
    dispatched.getOrLoad(
      taskId,
      () => store.deploymentTasks.get(taskId),
      (task) => task.status === 'Running',
    );
  const releaseOf = (releaseId: string) => releases.getOrLoad(releaseId, () => store.releases.get(releaseId));
  // Tasks this replica's engine just started, until a gateway here sends them (taken once): what
  // their tasks.dispatched event names need not be read back. A gateway on another replica reads
  // them; an entry no gateway here takes (its agent is elsewhere) ages out of the bound.
  const handedOver = new BoundedCache<DispatchedTask>(20_000);

  const changes = createDeploymentChangeHub(bus, logger);
  // Followers of a deployment's events (SSE) wake after every statement that stored lines.
  const progress = new ProgressWriter({ store, clock, onWritten: (id) => changes.notifyLogs(id) });
  const orchestrator = new Orchestrator({
    store,
    clock,
    bus,
    logger,
    replicaId,
    progress,
    timing: { ...DEFAULT_TIMING, ...options.timing },
    onFinished,
    metrics,
    storeAhead: options.storeAheadTasks,
    firstSlice: options.firstSliceTasks,
    onDispatched: (tasks) => {
      for (const task of tasks) handedOver.remember(task.task.id, task);
    },
  });

  /**
   * Advances the deployment until no wake-up came meanwhile (`state.again`, set by wake-ups that
   * find it advancing here) and the advance asks for no other ('again'): one lease, one advance
   * after another. `preclaimed`: the first advance's lease was taken already
   * (Orchestrator.finishAndClaim).
   */
  const advanceHere = async (
    deploymentId: string,
    state: { again: boolean },
    preclaimed?: Claimed,
    /** A new deployment's wake-up named what its validation reads (for the first advance). */
    validate?: ValidationKeys,
  ): Promise<AdvanceResult> => {
    let outcome: AdvanceResult;
    let claimed = preclaimed;
    let keys = validate;
    // Wake-ups that came while a recorded end was taking the lease: that advance knows only its
    // own task ended, so they are owed one more advance (which claims and reads every end).
    let owed = preclaimed !== undefined && state.again;
    do {
      state.again = false;
      outcome = await orchestrator.advance(deploymentId, () => state.again || owed, claimed, keys);
      claimed = undefined;
      keys = undefined;
      if (owed || outcome === 'again') state.again = true;
      owed = false;
    } while (state.again && outcome !== 'busy');
    return outcome;
  };

  /**
   * A task end recorded here, advancing the deployment at once when its statement also took the
   * lease; otherwise (another replica holds it, this one does not know the run, or it is being
   * advanced here already) the advance is asked for through the bus as any wake-up.
   */
  const finishHere = async (
    task: DeploymentTask,
    result: TaskEnd,
    lastLogSeq: number | null,
  ): Promise<{ finished: boolean; advanced: boolean }> => {
    const { deploymentId } = task;
    if (advancing.has(deploymentId))
      return { finished: await orchestrator.finishTask(task.id, result, task, lastLogSeq), advanced: false };
    // Held while the end is written, so no wake-up starts an advance meanwhile (it asks for another instead).
    const state = { again: false };
    advancing.set(deploymentId, state);
    let handedOver = false;
    try {
      const { finished, claimed } = await orchestrator.finishAndClaim(task, result, lastLogSeq);
      if (claimed) {
        handedOver = true;
        // Not awaited: the agent's session goes on reading its messages meanwhile (stop() waits).
        const advanced: Promise<void> = advanceHere(deploymentId, state, claimed)
          .then(
            async (outcome) => {
              if (outcome === 'busy') await wake([deploymentId]);
            },
            async (error: unknown) => {
              logger.error({ err: toError(error), deploymentId }, 'advancing a deployment failed');
              // The bus retries it (and gives up after ADVANCE_ATTEMPTS), as for any wake-up.
              await wake([deploymentId]);
            },
          )
          .finally(() => {
            advancing.delete(deploymentId);
            localAdvances.delete(advanced);
          });
        localAdvances.add(advanced);
      } else if (state.again && !finished) {
        // A wake-up that came meanwhile asks again (when the end moved, the caller wakes it anyway).
        await wake([deploymentId]);
      }
      return { finished, advanced: handedOver };
    } finally {
      if (!handedOver) advancing.delete(deploymentId);
    }
  };

  /** What agents run for these dispatched tasks; a task whose payload cannot be built fails with the reason. */
  const payloadsOf = async (rows: DispatchedTask[]): Promise<Array<{ machineId: string; payload: RunTaskPayload }>> => {
    const payloads: Array<{ machineId: string; payload: RunTaskPayload }> = [];
    for (const { task, deployment, machine } of rows) {
      dispatched.remember(task.id, task);
      if (deployment.cancellationRequestedUtc) continue;
      const release = await releaseOf(deployment.releaseId);
      if (!release) continue;
      try {
        payloads.push({
          machineId: machine.machineId,
          payload: buildRunTask({
            snapshot: release.snapshot,
            release: { version: release.version, notes: release.notes },
            deployment,
            task,
            machine,
            secrets,
          }),
        });
      } catch (error) {
        // A variable cycle or similar: the step cannot run; fail it with the reason.
        await orchestrator.finishTask(
          task.id,
          { status: 'Failed', exitCode: null, message: toError(error).message },
          task,
        );
        await wake([deployment.id]);
      }
    }
    return payloads;
  };

  const sweep = async () => {
    const now = clock.now();
    const bucket = Math.floor(now.getTime() / sweepIntervalMs);
    for (const deploymentId of await store.deployments.findUnowned(now, 200)) {
      // Replicas sweeping in the same interval publish the same id: JetStream keeps one.
      await bus.publishWork(
        WorkQueue.deployments,
        { v: 1, type: 'deployment.advance', deploymentId },
        { id: `sweep.${deploymentId}.${bucket}` },
      );
    }
  };

  /** One line per running task given, in each task's deployment, under the task's entry. */
  const tellRunningTasks = async (tasks: DispatchedTask[], say: (task: DeploymentTask) => string): Promise<void> => {
    const byDeployment = new Map<string, NewLogEntry[]>();
    for (const { task } of tasks) {
      const lines = byDeployment.get(task.deploymentId) ?? [];
      lines.push({
        level: 'Information',
        data: say(task),
        stepId: task.stepId,
        parentLogId: task.parentLogId,
        taskId: task.id,
      });
      byDeployment.set(task.deploymentId, lines);
    }
    await Promise.all([...byDeployment].map(([deploymentId, lines]) => progress.write(deploymentId, lines)));
  };
  const lostAfterSeconds = Math.round((options.timing?.agentLostMs ?? DEFAULT_TIMING.agentLostMs) / 1000);
  // Keyed by machine: of two sessions of one machine that ended in a window, the later one is
  // what counts (the earlier was replaced by it, and recordDisconnects would not mark it anyway).
  // A failure is the batch's: logged here once, not by each of its (up to thousands of) sessions.
  const disconnects = new TimedBatch<string, { sessionId: string; at: Date }, never>(
    DISCONNECT_BATCH_MS,
    async (ended) => {
      let marked: string[];
      try {
        marked = await store.machines.recordDisconnects(
          [...ended].map(([id, { sessionId, at }]) => ({ id, sessionId, at })),
        );
      } catch (error) {
        logger.error({ err: toError(error), sessions: ended.size }, 'recording agent disconnects failed');
        return;
      }
      try {
        await tellRunningTasks(
          await store.deploymentTasks.listDispatchedToMachines(marked),
          (task) =>
            `Machine '${task.machineName}' went offline (its agent disconnected): waiting up to ${lostAfterSeconds} s for it to reconnect; '${task.stepName}' fails there if it does not`,
        );
      } catch (error) {
        // The disconnects are stored; only the lines saying so in their deployments' logs are missing.
        logger.error(
          { err: toError(error), machines: marked.length },
          "writing agent disconnects to their deployments' logs failed",
        );
      }
    },
  );
  const heartbeats = new TimedBatch<string, { at: Date; homeFreeBytes?: number }, never>(HEARTBEAT_BATCH_MS, (beats) =>
    store.machines.recordHeartbeats([...beats].map(([id, beat]) => ({ id, ...beat }))),
  );
  const runningChecks = new TimedBatch<string, null, Array<{ taskId: string; cancelling: boolean }>>(
    HEARTBEAT_BATCH_MS,
    async (machines) => {
      const byMachine = new Map<string, Array<{ taskId: string; cancelling: boolean }>>(
        [...machines.keys()].map((id) => [id, []]),
      );
      for (const { machineId, ...task } of await store.deploymentTasks.listRunningOf([...machines.keys()]))
        byMachine.get(machineId)?.push(task);
      return byMachine;
    },
  );

  // Agents connecting together (10,000 after a replica restart) are recorded, and read their
  // tasks, one statement per batch instead of one each (a lone agent's connect waits for nothing).
  const hellos = new CoalescedBatch<
    string,
    { sessionId: string; info: AgentInfo },
    { offlineSince: Date | null; pendingUpgrade: string | null }
  >(CONNECT_BATCH_GAP_MS, async (batch) => {
    const at = clock.now();
    // Also settles upgrades to the versions the agents now run (the same statement).
    const recorded = await store.machines.recordConnectedMany(
      [...batch].map(([id, { sessionId, info }]) => ({ id, sessionId, at, info })),
    );
    const offlineSince = new Map<string, Date>();
    for (const [id, { offlineSince: since }] of recorded) if (since) offlineSince.set(id, since);
    if (offlineSince.size > 0) {
      try {
        await tellRunningTasks(
          await store.deploymentTasks.listDispatchedToMachines([...offlineSince.keys()]),
          (task) => {
            const since = offlineSince.get(task.machineId ?? '') ?? at;
            const seconds = Math.round((clock.now().getTime() - since.getTime()) / 1000);
            return `Machine '${task.machineName}' is back online after ${seconds} s; '${task.stepName}' goes on there`;
          },
        );
      } catch (error) {
        // The sessions are recorded; only the lines saying so in their deployments' logs are missing.
        logger.error(
          { err: toError(error), machines: offlineSince.size },
          "writing agent reconnects to their deployments' logs failed",
        );
      }
    }
    return recorded;
  });
  const assignments = new CoalescedBatch<string, null, { run: RunTaskPayload[]; cancel: string[] }>(
    CONNECT_BATCH_GAP_MS,
    async (machines) => {
      const answers = new Map(
        [...machines.keys()].map((id) => [id, { run: [] as RunTaskPayload[], cancel: [] as string[] }]),
      );
      const dispatchedTo = await store.deploymentTasks.listDispatchedToMachines([...machines.keys()]);
      for (const { task, deployment } of dispatchedTo)
        if (deployment.cancellationRequestedUtc) answers.get(task.machineId ?? '')?.cancel.push(task.id);
      // payloadsOf leaves out the tasks of deployments being cancelled.
      for (const { machineId, payload } of await payloadsOf(dispatchedTo)) answers.get(machineId)?.run.push(payload);
      return answers;
    },
  );

  const agentPort: AgentPort = {
    async connected(machineId, sessionId, info) {
      return { pendingUpgrade: (await hellos.get(machineId, { sessionId, info }))?.pendingUpgrade ?? null };
    },

    // Batched: when a replica stops or a network cut ends thousands of sessions at once, they were
    // two statements each (the disconnect and a read of the machine's tasks).
    disconnected(machineId, sessionId) {
      return disconnects.note(machineId, { sessionId, at: clock.now() }).then(noAnswer);
    },

    pendingUpgrade(machineId) {
      return store.machines.pendingUpgrade(machineId);
    },

    async upgradeReported(machineId, report) {
      const state = report.state === 'FAILED' ? 'Failed' : 'Started';
      const message = state === 'Failed' ? report.message.slice(0, 1000) || 'the agent gave no reason' : null;
      await store.machines.recordUpgrade(machineId, report.version, state, message, clock.now());
    },

    // Not async, and the batch's shared promise: ~670 a second at 10,000 agents, each promise counts.
    heartbeat(machineId, report = {}) {
      return heartbeats.note(machineId, { at: clock.now(), homeFreeBytes: report.homeFreeBytes }).then(noAnswer);
    },

    runningTasksOf(machineId) {
      return runningChecks.note(machineId, null).then((answers) => (answers && answers.get(machineId)) ?? []);
    },

    async assignmentsFor(machineId: string) {
      return (await assignments.get(machineId, null)) ?? { run: [], cancel: [] };
    },

    async dispatchedTasks(taskIds: readonly string[]) {
      const here: DispatchedTask[] = [];
      const elsewhere: string[] = [];
      for (const taskId of taskIds) {
        const task = handedOver.get(taskId);
        handedOver.forget(taskId);
        if (task) here.push(task);
        else elsewhere.push(taskId);
      }
      const read = elsewhere.length > 0 ? await store.deploymentTasks.listDispatchedByIds(elsewhere) : [];
      return payloadsOf([...here, ...read]);
    },

    async mayDownload(machineId, packageId, version) {
      for (const { deployment, task } of await store.deploymentTasks.listDispatchedTo(machineId)) {
        const snapshot = (await releaseOf(deployment.releaseId))?.snapshot;
        const step = snapshot?.steps.find((s) => s.stepId === task.stepId);
        // Exactly what the task's RunTask lists: the step's packages at the release's versions.
        if (
          snapshot &&
          step &&
          packagesOfStep(snapshot, step).some((p) => p.packageId === packageId && p.version === version)
        )
          return true;
      }
      return false;
    },

    async recordLogs(machineId: string, taskId: string, chunks: readonly AgentLogChunk[]): Promise<number> {
      const last = chunks.at(-1);
      if (!last) return 0;
      const task = await dispatchedTask(taskId);
      if (!task || task.machineId !== machineId) return 0;
      const lastSeq = last.firstSeq + last.lineCount - 1;
      let pending = chunks;
      // Twice at most: a re-sent batch that overlaps what is stored is stored again from the
      // first line not stored yet (the store refuses a run that does not start after it).
      for (let attempt = 0; pending.length > 0 && attempt < 2; attempt++) {
        const now = clock.now();
        const outcome = await progress.write(
          task.deploymentId,
          [],
          [],
          pending.map((chunk) => toNewChunk(task, chunk, now)),
        );
        if (outcome.storedChunks.has(task.id)) {
          metrics.logLinesIngested(pending.reduce((sum, chunk) => sum + chunk.lineCount, 0));
          return lastSeq;
        }
        const refused = outcome.refusedChunks.get(task.id);
        // Its step has ended (final): the lines are dropped, and acknowledged so the agent forgets them.
        if (!refused || !refused.running || refused.lastLogSeq >= lastSeq)
          return Math.max(lastSeq, refused?.lastLogSeq ?? 0);
        pending = sliceRun(pending, refused.lastLogSeq + 1);
      }
      return 0;
    },

    async recordResult(machineId, taskId, result, options = {}): Promise<ResultReceipt> {
      const task = await dispatchedTask(taskId);
      if (!task || task.machineId !== machineId) return 'recorded';
      const status = STATUS_BY_OUTCOME[result.outcome];
      const message =
        status === 'Succeeded'
          ? 'succeeded'
          : status === 'Cancelled'
            ? 'cancelled'
            : `failed${result.exitCode >= 0 ? ` with exit code ${result.exitCode}` : ''}${result.message ? `: ${result.message}` : ''}`;
      if (options.force) {
        // The lines it covers never came (the agent lost them): say so, then end the step anyway.
        const stored = (await store.deploymentTasks.get(taskId))?.lastLogSeq ?? 0;
        const missing = result.lastLogSeq - stored;
        if (missing > 0) {
          await progress.write(task.deploymentId, [
            {
              level: 'Warning',
              data: `${missing} line(s) of '${task.stepName}' on ${task.machineName} never arrived`,
              stepId: task.stepId,
              parentLogId: task.parentLogId,
              taskId: task.id,
            },
          ]);
        }
      }
      const covered = options.force ? null : result.lastLogSeq;
      const { finished, advanced } = await finishHere(task, { status, exitCode: result.exitCode, message }, covered);
      if (finished) {
        dispatched.forget(taskId);
        if (!advanced) await wake([task.deploymentId]);
        return 'recorded';
      }
      const current = await store.deploymentTasks.get(taskId);
      if (current?.status === 'Running') return 'waiting-for-lines';
      dispatched.forget(taskId);
      if (current && current.status !== status) {
        // The step had already ended here (its machine was lost, or it was cancelled): the
        // agent's own outcome arrives late. It is recorded in the log, never applied.
        await progress.write(task.deploymentId, [
          {
            level: 'Information',
            data: `A late result from '${task.machineName}' was not applied: '${task.stepName}' ${message} there, but had already ended as ${current.status}`,
            stepId: task.stepId,
            parentLogId: task.parentLogId,
            taskId: task.id,
          },
        ]);
      }
      return 'recorded';
    },
  };

  return {
    async start() {
      await changes.start();
      subscription = await bus.consumeWork(
        WorkQueue.deployments,
        async (message, context) => {
          if (message.type !== 'deployment.advance') return 'ack';
          const { deploymentId } = message;
          // Already being advanced here: ask that run to go once more instead of colliding with
          // our own lease and retrying 250 ms later (a wide deployment's results arrive together).
          const running = advancing.get(deploymentId);
          if (running) {
            running.again = true;
            return 'ack';
          }
          const state = { again: false };
          advancing.set(deploymentId, state);
          try {
            const outcome = await advanceHere(deploymentId, state, undefined, message.validate);
            return outcome === 'busy' ? { retryInMs: 250 } : 'ack';
          } catch (error) {
            const { deliveryCount } = context;
            logger.error({ err: toError(error), deploymentId, deliveryCount }, 'advancing a deployment failed');
            // The database coming back fixes that one: retried (with backoff) until it does.
            if (isDatabaseUnavailable(error) || deliveryCount < ADVANCE_ATTEMPTS) throw error;
            await orchestrator.giveUp(deploymentId, deliveryCount);
            return 'ack';
          } finally {
            advancing.delete(deploymentId);
          }
        },
        // Advances of different deployments run side by side (one deployment's never do: the
        // `advancing` map and its lease). With 4, ten deployments in flight queued for a slot
        // (bench/throughput: created -> Running p50 417 ms with 4, 281 ms with 16).
        { maxInFlight: 16 },
      );
      sweeper = setInterval(() => {
        sweep().catch((error: unknown) => logger.error({ err: toError(error) }, 'sweep failed'));
      }, sweepIntervalMs);
      logger.info({ replicaId }, 'engine started');
    },
    async stop() {
      if (sweeper) clearInterval(sweeper);
      sweeper = null;
      await subscription?.close();
      subscription = null;
      await Promise.all(localAdvances);
      await changes.stop();
      await Promise.all([heartbeats.flush(), runningChecks.flush(), disconnects.flush()]);
    },
    wake,
    triggerAutomaticDeployments,
    agentPort,
    orchestrator,
    changes,
  };
}

/** .NET ticks of the Unix epoch, and per nanosecond (a tick is 100 ns). */
const UNIX_EPOCH_TICKS = 621_355_968_000_000_000n;

/**
 * The agent's chunk as the store keeps it. Times an agent reports are its own clock's: the first
 * line's is clamped to the server's now (a machine dated 2262 cannot move a deployment's
 * LastLogDate), and the lines' spacing is kept only while it fits before now.
 */
function toNewChunk(task: DeploymentTask, chunk: AgentLogChunk, now: Date): NewLogChunk {
  const nowTick = dateToTicks(now);
  let agentTick: bigint;
  try {
    agentTick = UNIX_EPOCH_TICKS + BigInt(chunk.firstUnixNanos) / 100n;
  } catch {
    agentTick = nowTick;
  }
  const firstTick = agentTick > 0n && agentTick < nowTick ? agentTick : nowTick;
  let steps = chunk.timeDeltasNs?.map((ns) => Math.max(1, Math.round(ns / 100))) ?? null;
  let span = BigInt(steps ? steps.reduce((sum, step) => sum + step, 0) : chunk.lineCount - 1);
  if (firstTick + span > nowTick) {
    steps = null;
    span = BigInt(chunk.lineCount - 1);
  }
  let levels: Buffer | null = null;
  let warnings = 0;
  if (chunk.streams) {
    for (let i = 0; i < chunk.streams.length; i++) {
      // STDERR (LogLine.Stream 2) is a Warning; STDOUT and the agent's own lines are Information.
      if (chunk.streams[i] !== 2) continue;
      levels ??= Buffer.alloc(chunk.lineCount);
      levels[i] = 1;
      warnings++;
    }
  }
  return {
    taskId: task.id,
    stepId: task.stepId,
    parentLogId: task.parentLogId,
    firstSeq: chunk.firstSeq,
    lineCount: chunk.lineCount,
    firstTick,
    tickSteps: steps && steps.some((step) => step !== 1) ? encodeVarints(steps) : null,
    spanTicks: span,
    levels,
    warnings,
    data: chunk.text,
  };
}

/** The run from line `fromSeq` on (the lines before it are stored already). */
function sliceRun(chunks: readonly AgentLogChunk[], fromSeq: number): AgentLogChunk[] {
  return chunks.flatMap((chunk) => sliceChunk(chunk, fromSeq) ?? []);
}

/** The chunk from line `fromSeq` on (the lines before it are stored already). */
function sliceChunk(chunk: AgentLogChunk, fromSeq: number): AgentLogChunk | null {
  const skip = fromSeq - chunk.firstSeq;
  if (skip <= 0) return chunk;
  if (skip >= chunk.lineCount) return null;
  const lines = chunk.text.split('\n');
  const skippedNanos = (chunk.timeDeltasNs ?? []).slice(0, skip).reduce((sum, ns) => sum + ns, 0);
  return {
    firstSeq: fromSeq,
    lineCount: chunk.lineCount - skip,
    firstUnixNanos: (BigInt(chunk.firstUnixNanos) + BigInt(skippedNanos)).toString(),
    text: lines
      .slice(skip, chunk.lineCount)
      .map((line) => `${line}\n`)
      .join(''),
    streams: chunk.streams ? chunk.streams.subarray(skip) : null,
    timeDeltasNs: chunk.timeDeltasNs ? chunk.timeDeltasNs.slice(skip) : null,
  };
}
