/**
 * The orchestrator: moves one deployment through its states (contract §5) by reading the truth
 * from PostgreSQL, asking the pure planner/scheduler what to do, and writing the outcome back.
 *
 * `advance(id)` is idempotent and safe on any replica: it runs only while this replica holds the
 * deployment's short lease, and every task transition is guarded in SQL (Pending → Running
 * happens once), so two replicas, a redelivered message or a crash in the middle never start a
 * step twice. Agents are woken through the bus; they pull their tasks from the database.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { BoundedCache, isFinalStatus, type Clock, type Logger, type Metrics, type TaskStatus } from '../core/index.ts';
import type { AdvanceDeploymentMessage, Bus } from '../bus/index.ts';
import { EventSubject } from '../bus/index.ts';
import type {
  Deployment,
  DeploymentTask,
  DispatchedTask,
  LogLevel,
  NewLogEntry,
  RecordClaim,
  Store,
  TargetMachine,
  TaskStarts,
} from '../store/index.ts';
import { checkGate, isAgentOnline } from '../domain/index.ts';
import { toPlanInput } from './plan-input.ts';
import { planDeployment, planTargets, targetCount } from './planner.ts';
import { fromStoredPlan, toStoredPlan } from './stored-plan.ts';
import { referenceHintLines } from './reference-hints.ts';
import type { ProgressWriter } from './progress-writer.ts';
import { newTask, PlannedTasks, type NewTask } from './planned-tasks.ts';
import { IncrementalScheduler, nextActions } from './scheduler.ts';
import { targetKey, type NextActions, type Plan, type Stage, type StartAction } from './plan-types.ts';

export interface OrchestratorTiming {
  /** How long one replica may hold a deployment before another may take it over. */
  leaseMs: number;
  /** A running task whose agent has not been seen for this long fails ("lost contact"). */
  agentLostMs: number;
  /** After a cancel, running tasks whose agent does not confirm within this time are marked Cancelled. */
  cancelGraceMs: number;
}

// The lease only covers one advance (milliseconds); it is what a replica that dies mid-advance
// costs the others before they take over, so it is kept short.
export const DEFAULT_TIMING: OrchestratorTiming = { leaseMs: 5_000, agentLostMs: 120_000, cancelGraceMs: 30_000 };

export interface OrchestratorDeps {
  store: Store;
  clock: Clock;
  bus: Bus;
  logger: Logger;
  replicaId: string;
  timing: OrchestratorTiming;
  /** Where task ends are written (coalesced with the agents' log lines of the same deployment). */
  progress: ProgressWriter;
  /** Called once a deployment reaches Completed or Failed: frees slots, triggers automatic phases. */
  onFinished(deployment: Deployment): Promise<void>;
  /**
   * Tasks just started on online machines, as the gateway needs them for RunTask, before their
   * tasks.dispatched event goes out: a gateway on this replica need not read them back.
   */
  onDispatched?(tasks: readonly DispatchedTask[]): void;
  metrics: Metrics;
  /** Tasks stored ahead of what has started (default STORE_AHEAD; tests use a few). */
  storeAhead?: number;
  /** Starts committed with validation before the rest of the first window (default DISPATCH_SLICE; tests use a few). */
  firstSlice?: number;
}

/**
 * 'busy': another replica holds it; try later. 'again': advance it again now (its lease was
 * released with its last write, and what happened after that needs another look).
 */
export type AdvanceResult = 'done' | 'busy' | 'again';

/** A deployment's lease taken for an advance, as store.deployments.claim answers it. */
export type Claimed = Deployment & { previousLeaseOwner: string | null; advanceSeq: number; ended: DeploymentTask[] };

/**
 * What a new deployment's validation reads by, known to whoever created it: its wake-up names them
 * so that those reads leave together with the claim instead of after its answer.
 */
export type ValidationKeys = NonNullable<AdvanceDeploymentMessage['validate']>;

/** What validating a deployment reads: its release, its organization's limits, its environment's machines. */
type ValidationReads = Promise<
  [
    Awaited<ReturnType<Store['releases']['get']>>,
    Awaited<ReturnType<Store['deployments']['organizationLimits']>>,
    TargetMachine[],
  ]
>;

/** How a task ended, as its end is recorded (an agent's result, or decided here). */
export type TaskEnd = { status: 'Succeeded' | 'Failed' | 'Cancelled'; exitCode: number | null; message: string };

const stepParentLogId = (deploymentId: string, stepId: string) => `${deploymentId}.${stepId}`;
const stepParentEntry = (deploymentId: string, task: Pick<DeploymentTask, 'stepId' | 'stepName'>): NewLogEntry => ({
  id: stepParentLogId(deploymentId, task.stepId),
  level: 'Information',
  data: `Step '${task.stepName}'`,
  stepId: task.stepId,
});

/**
 * Tasks named per tasks.dispatched event (~80 bytes each): the agents of one slice get their
 * RunTasks while the next slice's are built, so a wide window's first task does not wait for its
 * last (at 10,000 machines, window 500: first RunTask median 231 against 266 ms in one event).
 * Also the starts a new deployment's validation commits before the rest of its first window.
 */
const DISPATCH_SLICE = 100;

/** Plans are immutable once stored; this many stay in memory so each wake-up does not re-read one. */
const PLAN_CACHE_SIZE = 1_000;

/** Running deployments whose task statuses a replica keeps between advances (each ~0.5 KiB a task). */
const RUN_CACHE_SIZE = 200;

/**
 * Tasks of a wide deployment stored ahead of what has started: validation inserts the first window
 * and this many more, and each later advance, after its wake-ups went out, inserts as many as it
 * started or skipped, so the stored lead stays about this long and each advance's insert is the
 * size of its refill (~35 µs a row here). Storing the other 9,500 of 10,000 at once held the
 * replica's next advance — the first window's refills — for ~350 ms.
 */
const STORE_AHEAD = 1_000;

/**
 * What this replica knows of a running deployment's tasks, so a refill reads only what ended
 * since (the window), not all N tasks, and asks a scheduler that walks only the window. The
 * database stays the record: this is trusted only while every claim since it was read was this
 * replica's (`seq`), and dropped on any surprise (a write that did not move what it expected, an
 * error mid-advance); then the tasks are read again.
 */
interface RunState {
  /** advance_seq of the claim that last wrote through it. */
  seq: number;
  /** Every task, by targetKey(stepId, machineId). */
  tasks: Map<string, DeploymentTask>;
  /** The tasks it knows as Running, by ID. */
  running: Map<string, DeploymentTask>;
  scheduler: IncrementalScheduler;
  /**
   * Tasks validation planned that are not inserted yet, in plan order (the order they start in):
   * each advance inserts those its decisions touch and keeps STORE_AHEAD more stored. Held only by the replica
   * that validated; whoever reads the tasks in full instead inserts what is missing (#allTasks).
   */
  unstored: Map<string, NewTask>;
  /** The claim that started this advance already read what ended (claim's `running`): no read needed. */
  endedRead: boolean;
  /**
   * The deployment as its last advance here claimed it: a task end recorded here may take the
   * lease in its own statement (finishAndClaim), which reads back only what may have changed.
   */
  deployment: Deployment;
}

export class Orchestrator {
  readonly #deps: OrchestratorDeps;
  readonly #plans = new BoundedCache<Plan>(PLAN_CACHE_SIZE);
  readonly #runs = new BoundedCache<RunState>(RUN_CACHE_SIZE);
  /** advance_seq of the claim this replica holds now, per deployment. */
  readonly #claims = new Map<string, number>();
  /** Deployments that reached a final status in the advance now running (their lease is released). */
  readonly #finished = new Set<string>();
  /** Deployments whose lease the advance's last write released (RecordLease.releaseBy). */
  readonly #released = new Set<string>();
  /** …and that should be advanced again at once (an offline machine's task failed after that write). */
  readonly #againAfterRelease = new Set<string>();

  constructor(deps: OrchestratorDeps) {
    this.#deps = deps;
  }

  /**
   * Drives the deployment as far as it can go now. 'busy': another replica holds it; try later.
   * `goOn`: asked at the end; true when the caller advances it again at once (a wake-up came
   * meanwhile), so the lease is kept for that advance's claim instead of released and re-taken.
   */
  async advance(
    deploymentId: string,
    goOn: () => boolean = () => false,
    /** The lease a task end recorded here already took (finishAndClaim): no claim of its own. */
    preclaimed?: Claimed,
    /** A new deployment's (its wake-up's): what its validation will read is asked for with the claim. */
    keys?: ValidationKeys,
  ): Promise<AdvanceResult> {
    const { store, clock, replicaId, timing } = this.#deps;
    const now = clock.now();
    // Only this advance touches the deployment's run state here (the engine never overlaps two).
    const run = this.#runs.get(deploymentId);
    // One round trip less before a new deployment's first dispatch. Unused when the claim finds it
    // past validation (a wake-up delivered twice) or not ours: a few cheap reads thrown away.
    const early = keys && !run && !preclaimed ? { keys, reads: this.#readForValidation(keys) } : undefined;
    early?.reads.catch(() => undefined);
    const claimed =
      preclaimed ??
      (await store.deployments.claim(
        deploymentId,
        replicaId,
        now,
        new Date(now.getTime() + timing.leaseMs),
        run ? [...run.running.keys()] : [],
      ));
    if (!claimed) {
      const current = await store.deployments.get(deploymentId);
      return current && !isFinalStatus(current.status) ? 'busy' : 'done';
    }
    if (claimed.previousLeaseOwner !== null && claimed.previousLeaseOwner !== replicaId) {
      this.#deps.metrics.leaseTakenOver();
    }
    // Another replica advanced it since: what it knows may be stale.
    if (run && run.seq !== claimed.advanceSeq - 1) this.#runs.forget(deploymentId);
    else if (run) {
      run.seq = claimed.advanceSeq;
      // The claim read the ended ones among the tasks it knew as running (nothing else can end).
      for (const task of claimed.ended) this.#learn(run, task);
      run.endedRead = true;
      const { previousLeaseOwner: _owner, advanceSeq: _seq, ended: _ended, ...deployment } = claimed;
      run.deployment = deployment;
    }
    this.#claims.set(deploymentId, claimed.advanceSeq);
    let keep = false;
    try {
      // Each state hands on the deployment as it left it, so Validating → Running → dispatch
      // happens in one advance without reading the deployment back between states.
      let deployment: Deployment | null = claimed;
      for (let pass = 0; deployment && pass < 6; pass++) deployment = await this.#step(deployment, early);
      keep = goOn() && !this.#finished.has(deploymentId);
      return this.#againAfterRelease.has(deploymentId) ? 'again' : 'done';
    } catch (error) {
      this.#runs.forget(deploymentId);
      throw error;
    } finally {
      this.#claims.delete(deploymentId);
      this.#finished.delete(deploymentId);
      this.#againAfterRelease.delete(deploymentId);
      if (!this.#released.delete(deploymentId) && !keep) await store.deployments.releaseLease(deploymentId, replicaId);
    }
  }

  /** Does what the state allows; returns the deployment when it moved to a state that can go on now. */
  async #step(
    deployment: Deployment,
    early?: { keys: ValidationKeys; reads: ValidationReads },
  ): Promise<Deployment | null> {
    if (deployment.cancellationRequestedUtc) {
      await this.#cancel(deployment);
      return null;
    }
    switch (deployment.status) {
      case 'Validating':
        return this.#validate(
          deployment,
          early && sameKeys(early.keys, deployment) ? early.reads : this.#readForValidation(deployment),
        );
      case 'AwaitingSlot':
        return this.#acquireSlot(deployment);
      case 'Running':
        await this.#run(deployment);
        return null;
      case 'Queued':
        // Claiming a due deployment made it Validating: this one is gated, or scheduled for later.
        return deployment.gated ? this.#gate(deployment) : null;
      case 'Completed':
      case 'Failed':
      case 'Cancelled':
        return null;
    }
  }

  /**
   * Queued behind its gate (issue #15): starts validating once enough approvals came and no
   * freeze holds it; otherwise it keeps waiting with its reason (said once in its log), looked
   * at again when a freeze ends or an approval asks.
   */
  async #gate(deployment: Deployment): Promise<Deployment | null> {
    const { store, clock } = this.#deps;
    const now = clock.now();
    if (deployment.scheduledFor && deployment.scheduledFor > now) return null;
    const decision = await checkGate(store, deployment, now);
    if (decision.clear) {
      const passed = await store.deployments.passGate(deployment.id, now);
      if (passed) await this.#publishChanged(deployment.id, passed.status);
      return passed;
    }
    await store.transaction(async (tx) => {
      await tx.deployments.holdAtGate(deployment.id, decision.reason, decision.recheckAt, now);
      if (decision.reason !== deployment.waitingReason)
        await tx.deploymentLogs.append(
          deployment.id,
          [{ level: 'Information', data: `Waiting: ${decision.reason}` }],
          now,
        );
    });
    if (decision.reason !== deployment.waitingReason) await this.#publishChanged(deployment.id, 'Queued');
    return null;
  }

  /** Queue wait: from creation, or from its scheduled time when it was scheduled for later. */
  #started(deployment: Deployment, now: Date): void {
    const queuedSince = Math.max(deployment.createdUtc.getTime(), deployment.scheduledFor?.getTime() ?? 0);
    this.#deps.metrics.deploymentStarted((now.getTime() - queuedSince) / 1000);
  }

  /**
   * Ends a deployment that cannot be advanced (its advance kept failing) as Failed, with a line
   * that says so, instead of leaving it in its state with nothing in its log while it is retried
   * forever. The cause is in the control plane's log, not here: an internal error's text is not
   * for the workspace's readers.
   */
  async giveUp(deploymentId: string, attempts: number): Promise<void> {
    const deployment = await this.#deps.store.deployments.get(deploymentId);
    if (!deployment || isFinalStatus(deployment.status)) return;
    await this.#finish(
      deployment,
      'Failed',
      () =>
        `The deployment failed: Gantry could not advance it after ${attempts} attempts (an internal error; the control plane's log has it under deploymentId ${deploymentId})`,
      'Error',
    );
  }

  #publishChanged(deploymentId: string, status: Deployment['status']): Promise<void> {
    this.#deps.logger.info({ deploymentId, status }, 'deployment status changed');
    return this.#deps.bus.publishEvent(EventSubject.deploymentChanged(deploymentId), {
      v: 1,
      type: 'deployment.changed',
      deploymentId,
      status,
    });
  }

  /**
   * Ends the deployment with its last log line in one transaction (after `prelude`'s writes, in
   * the same transaction), then frees what it held.
   */
  async #finish(
    deployment: Deployment,
    status: 'Completed' | 'Failed' | 'Cancelled',
    message: (errorCount: number) => string,
    level: LogLevel,
    prelude?: (tx: Store, now: Date) => Promise<unknown>,
  ): Promise<void> {
    const { store, clock } = this.#deps;
    const now = clock.now();
    const last = await store.transaction(async (tx) => {
      await prelude?.(tx, now);
      const finished = await tx.deployments.update(
        deployment.id,
        { status, completedUtc: now, lastAttemptUtc: now },
        now,
      );
      // The transaction's last statement: its COMMIT leaves right behind it.
      const entries = [{ level, data: message(finished?.errorCount ?? 0) }];
      return tx.deploymentLogs.sendRecord(deployment.id, [{ entries }], now);
    });
    await last.answered;
    this.#plans.forget(deployment.id);
    this.#runs.forget(deployment.id);
    if (this.#claims.has(deployment.id)) this.#finished.add(deployment.id);
    this.#deps.metrics.deploymentFinished(
      status,
      deployment.startedUtc ? (now.getTime() - deployment.startedUtc.getTime()) / 1000 : null,
    );
    await this.#publishChanged(deployment.id, status);
    await this.#deps.onFinished(deployment);
  }

  async #plan(deploymentId: string): Promise<Plan | null> {
    return this.#plans.getOrLoad(deploymentId, async () =>
      fromStoredPlan(await this.#deps.store.deployments.getPlan(deploymentId)),
    );
  }

  /** What validating a deployment reads (#validate), asked for together. */
  #readForValidation(keys: ValidationKeys): ValidationReads {
    const { store } = this.#deps;
    return Promise.all([
      store.releases.get(keys.releaseId),
      store.deployments.organizationLimits(keys.workspaceId),
      store.deploymentMachines.listInEnvironment(keys.environmentId),
    ]);
  }

  /**
   * Validating: resolve targets into a plan and, when a slot is free, store and start the first
   * tasks in one transaction with their log lines (AwaitingSlot otherwise, every task stored).
   * The rest of the first window starts right after that commit, the rest of the plan is stored
   * stepwise after the first dispatch.
   */
  async #validate(deployment: Deployment, reads: ValidationReads): Promise<Deployment | null> {
    const { store, clock } = this.#deps;
    const validating: NewLogEntry = { level: 'Information', data: 'Validating the deployment' };
    const [release, organization, machines] = await reads;
    if (!release) {
      await this.#finish(
        deployment,
        'Failed',
        () => 'The release or its project no longer exists',
        'Error',
        (tx, now) => tx.deploymentLogs.append(deployment.id, [validating], now),
      );
      return null;
    }
    const now = clock.now();
    const plan = planDeployment(
      toPlanInput(
        release.snapshot,
        deployment,
        machines,
        { maxParallelMachines: organization.maxParallelMachines },
        now,
      ),
    );
    const lines: NewLogEntry[] = [
      validating,
      {
        level: 'Information',
        data: `Planned ${targetCount(plan)} step × machine target(s) on ${machines.length} machine(s) in '${deployment.environmentName}'`,
      },
    ];
    for (const stage of plan.stages) lines.push(...skipLines(deployment.id, stage));
    lines.push(...referenceHintLines(release.snapshot, plan));
    // What starts first is decided before anything is stored: only those tasks are made and
    // inserted before the first dispatch, the others right after it (10,000 rows take a few hundred
    // ms to insert, and making 10,000 task objects with their keys, most of it the garbage
    // collector copying them, was ~35 of the ~80 ms of CPU before the first dispatch). A replica
    // that dies in between leaves tasks missing; whoever reads the deployment's tasks next inserts
    // them (#currentRun). Asked of the scheduler the run then keeps (nextActions walks every target
    // several times: ~70 ms of 10,000 before the first dispatch, and the run's own scheduler built
    // again after it).
    const planned = new PlannedTasks(deployment.id, plan, machines);
    const scheduler = new IncrementalScheduler(plan, new Map());
    const decided = toDecisions((action) => planned.first(action), scheduler.next());
    // Only the first window's first slice is stored and started with validation; the rest of the
    // window right after its commit, while that slice's RunTasks go out. At window 500 the
    // transaction held 500 inserts and starts (~40 ms of PostgreSQL) before any agent was told.
    const { head: early, tail } = sliceStarts(decided, this.#deps.firstSlice ?? DISPATCH_SLICE);
    const deferred = new Set(tail?.start);
    const first = planned.made().filter((task) => !deferred.has(task));
    // What validation inserts when the first window is not started as one: the tail with the rest.
    const unsliced = () => [...deferred, ...planned.allNow().rest];
    const stored = toStoredPlan(plan);
    // Started at once when a slot is free: the first targets are claimed in the same transaction.
    const outcome = await store.transaction(async (tx) => {
      // Sent together (a pipelined connection: one round trip); neither needs the other's answer.
      const [inserted, started] = await Promise.all([
        tx.deploymentTasks.insertManyCounted(first),
        tx.deployments.tryStart(deployment, now, {
          organizationId: organization.organizationId,
          fromValidating: { plan: stored },
        }),
      ]);
      // All new unless an earlier attempt of this validation stored tasks: then all are read.
      const fresh = inserted === first.length;
      if (!started) {
        await tx.deploymentTasks.insertManyCounted(unsliced());
        await tx.deployments.update(deployment.id, { plan: stored, status: 'AwaitingSlot' }, now);
        await tx.deploymentLogs.append(deployment.id, lines, now);
        return { running: false as const, written: Promise.resolve(NOTHING_WRITTEN) };
      }
      lines.push(deployingLine(deployment));
      // Null: the tasks are the ones made here, completed after the first dispatch.
      let current: DeploymentTask[] | null = null;
      let decisions = early;
      if (!fresh) {
        await tx.deploymentTasks.insertManyCounted(unsliced());
        current = await tx.deploymentTasks.listForDeployment(deployment.id);
        decisions = decide(plan, current);
      }
      // The record statement is the transaction's last: its COMMIT leaves right behind it.
      const sent = await this.#writeDecisions(tx, deployment.id, decisions, lines, now);
      return { running: true as const, written: sent.answered, current, decisions, tail: fresh ? tail : null };
    });
    const written = await outcome.written;
    // Sent before anything is announced: PostgreSQL stores and starts the tail meanwhile.
    const tailStarting = outcome.running && outcome.tail ? this.#startTail(deployment.id, outcome.tail) : undefined;
    tailStarting?.catch(() => undefined);
    this.#plans.remember(deployment.id, plan);
    const { running } = outcome;
    if (running) this.#started(deployment, now);
    await this.#publishChanged(deployment.id, running ? 'Running' : 'AwaitingSlot');
    if (!outcome.running) return { ...deployment, status: 'AwaitingSlot' };
    let again = await this.#afterDecisions(deployment, written, now);
    const tailStarted = tailStarting && (await tailStarting);
    // Fewer started than decided: a target of the tail already had a task (an earlier attempt
    // stored it under another ID). The run state is dropped (#applyWritten); the next pass reads
    // the tasks and starts it.
    if (tailStarted)
      again =
        // Whether its machines are online is judged at the tail's own start time.
        (await this.#afterDecisions(deployment, tailStarted.written, tailStarted.at)) ||
        tailStarted.written.started.length !== outcome.tail!.start.length ||
        again;
    // After the first dispatch: what follows is O(N) and only the next refill needs it.
    const made = outcome.current ? null : await planned.all();
    const run = this.#newRun(
      { ...deployment, status: 'Running', startedUtc: now },
      plan,
      outcome.current ?? made!.all,
      made ? { tasks: made.byKey, scheduler } : undefined,
    );
    const unstored = made?.rest ?? [];
    if (run) this.#applyWritten(deployment.id, run, outcome.decisions, written);
    if (run && tailStarted && this.#runs.get(deployment.id) === run)
      this.#applyWritten(deployment.id, run, outcome.tail!, tailStarted.written);
    if (run && this.#runs.get(deployment.id) === run) {
      // STORE_AHEAD of the rest now; later advances keep that lead (#storeAhead).
      for (const task of unstored) run.unstored.set(task.id, task);
      await this.#storeAhead(deployment.id, run, this.#deps.storeAhead ?? STORE_AHEAD);
    } else await store.deploymentTasks.insertManyCounted(unstored);
    // Nothing started (no targets at all) or the statuses already moved on: evaluate again now.
    return again || written.started.length === 0 ? { ...deployment, status: 'Running', startedUtc: now } : null;
  }

  /**
   * Stores and starts the rest of a new deployment's first window (sliceStarts' tail) after
   * validation committed its head. A target that already had a task (an earlier attempt of the
   * validation stored it, under another ID) is not started here: what it answers says so.
   */
  async #startTail(deploymentId: string, tail: Decisions): Promise<{ written: Written; at: Date }> {
    const { store, clock } = this.#deps;
    await store.deploymentTasks.insertManyCounted(tail.start);
    // Its own time: the tail starts after the head's commit, not when validation began.
    const at = clock.now();
    return { written: await (await this.#writeDecisions(store, deploymentId, tail, [], at)).answered, at };
  }

  /** AwaitingSlot: one running deployment per project and environment, and the organization's cap. */
  async #acquireSlot(deployment: Deployment): Promise<Deployment | null> {
    const { store, clock } = this.#deps;
    const now = clock.now();
    const started = await store.transaction(async (tx) => {
      if (!(await tx.deployments.tryStart(deployment, now))) return false;
      await tx.deploymentLogs.append(deployment.id, [deployingLine(deployment)], now);
      return true;
    });
    if (!started) return null;
    this.#started(deployment, now);
    await this.#publishChanged(deployment.id, 'Running');
    return { ...deployment, status: 'Running', startedUtc: now };
  }

  /** Running: start what the scheduler allows, record skips, finish when the plan is done. */
  async #run(deployment: Deployment): Promise<void> {
    const { store, clock, timing } = this.#deps;
    const plan = await this.#plan(deployment.id);
    if (!plan) return this.#finish(deployment, 'Failed', () => 'The deployment has no plan', 'Error');
    const now = clock.now();
    const run = await this.#currentRun(deployment, plan);
    if (await this.#failLostTasks([...run.running.values()], now, timing.agentLostMs))
      await this.#readEnded(deployment.id, run);
    const decisions = decideFor(run);
    const { outcome } = decisions;
    if (outcome && decisions.start.length === 0) {
      // A deployment ends with every target of its plan stored, as if all had been inserted at once.
      await this.#storeTasks(deployment.id, run, [...run.unstored.keys()]);
      const failed = outcome.status === 'Failed';
      return this.#finish(
        deployment,
        failed ? 'Failed' : 'Completed',
        (errors) =>
          failed
            ? 'The deployment failed'
            : errors > 0
              ? `The deployment completed with ${errors} error(s)`
              : 'The deployment completed successfully',
        failed ? 'Error' : 'Information',
        // Targets skipped because of a failure are recorded with the outcome.
        async (tx, at) => (await this.#writeDecisions(tx, deployment.id, decisions, [], at)).answered,
      );
    }
    if (decisions.start.length === 0 && decisions.skip.length === 0) return;
    // A decision is written only for stored tasks (validation stores a wide plan's rest stepwise).
    await this.#storeTasks(
      deployment.id,
      run,
      [...decisions.start, ...decisions.skip.map((s) => s.task)].map((t) => t.id),
    );
    // Starts alone are one statement; skips (a transition each) commit with them. When that is
    // the advance's last write (starts only, the plan all stored), the statement also releases
    // the lease; a machine found offline then asks for another advance, which claims as usual.
    const last = decisions.skip.length === 0 && run.unstored.size === 0;
    const sent =
      decisions.skip.length === 0
        ? await this.#writeDecisions(store, deployment.id, decisions, [], now, last)
        : await store.transaction((tx) => this.#writeDecisions(tx, deployment.id, decisions, [], now));
    const written = await sent.answered;
    if (written.released) this.#released.add(deployment.id);
    this.#applyWritten(deployment.id, run, decisions, written);
    const again = await this.#afterDecisions(deployment, written, now);
    // The agents are woken: inserting more of the plan now costs the next refill nothing.
    if (this.#runs.get(deployment.id) === run)
      await this.#storeAhead(deployment.id, run, decisions.start.length + decisions.skip.length);
    if (again && written.released) this.#againAfterRelease.add(deployment.id);
    else if (again) return this.#run(deployment);
  }

  /** Inserts these of the run's unstored tasks (a decision is written only for stored tasks). */
  async #storeTasks(deploymentId: string, run: RunState, ids: readonly string[]): Promise<void> {
    const tasks = ids.flatMap((id) => run.unstored.get(id) ?? []);
    if (tasks.length === 0) return;
    for (const task of tasks) run.unstored.delete(task.id);
    // Fewer inserted: another replica filled the plan in meanwhile, under IDs of its own.
    if ((await this.#deps.store.deploymentTasks.insertManyCounted(tasks)) !== tasks.length)
      this.#runs.forget(deploymentId);
  }

  /** Inserts the next `count` of the run's unstored tasks. */
  async #storeAhead(deploymentId: string, run: RunState, count: number): Promise<void> {
    if (run.unstored.size === 0) return;
    const ids: string[] = [];
    for (const id of run.unstored.keys()) {
      if (ids.length >= count) break;
      ids.push(id);
    }
    await this.#storeTasks(deploymentId, run, ids);
  }

  /** The deployment's tasks as this replica knows them, brought up to date: only what ended since is read. */
  async #currentRun(deployment: Deployment, plan: Plan): Promise<RunState> {
    const deploymentId = deployment.id;
    const known = this.#runs.get(deploymentId);
    if (known) {
      if (known.endedRead) known.endedRead = false;
      else await this.#readEnded(deploymentId, known);
      return known;
    }
    const tasks = await this.#allTasks(deploymentId, plan);
    return (
      this.#newRun(deployment, plan, tasks) ?? {
        seq: -1,
        tasks: byTarget(tasks),
        running: new Map(),
        scheduler: new IncrementalScheduler(plan, statusesOf(tasks)),
        unstored: new Map(),
        endedRead: false,
        deployment,
      }
    );
  }

  /**
   * Every task of the deployment, read in full. Validation inserts most tasks after the first
   * dispatch, a chunk per advance on the replica that validated: one that died meanwhile, or a
   * replica reading them without that replica's run state, finds some missing and inserts them.
   */
  async #allTasks(deploymentId: string, plan: Plan | null): Promise<DeploymentTask[]> {
    const { deploymentTasks } = this.#deps.store;
    const known = this.#runs.get(deploymentId);
    if (known) await this.#storeTasks(deploymentId, known, [...known.unstored.keys()]);
    const tasks = await deploymentTasks.listForDeployment(deploymentId);
    const targets = plan ? planTargets(plan) : [];
    if (!plan || tasks.length >= targets.length) return tasks;
    await deploymentTasks.insertManyCounted(targets.map((t) => newTask(deploymentId, plan, t)));
    return deploymentTasks.listForDeployment(deploymentId);
  }

  /** A run state for these tasks, remembered while this replica holds the claim (null: no claim held). */
  #newRun(
    deployment: Deployment,
    plan: Plan,
    tasks: DeploymentTask[],
    /** What validation built for these very tasks (its scheduler answered the first decision). */
    built?: Pick<RunState, 'tasks' | 'scheduler'>,
  ): RunState | null {
    const deploymentId = deployment.id;
    const seq = this.#claims.get(deploymentId);
    if (seq === undefined) return null;
    const run: RunState = {
      seq,
      tasks: built?.tasks ?? byTarget(tasks),
      running: new Map(tasks.filter((t) => t.status === 'Running').map((t) => [t.id, t])),
      scheduler: built?.scheduler ?? new IncrementalScheduler(plan, statusesOf(tasks)),
      unstored: new Map(),
      endedRead: false,
      deployment,
    };
    this.#runs.remember(deploymentId, run);
    return run;
  }

  async #readEnded(deploymentId: string, run: RunState): Promise<void> {
    if (run.running.size === 0) return;
    for (const task of await this.#deps.store.deploymentTasks.listEnded(deploymentId, [...run.running.keys()]))
      this.#learn(run, task);
  }

  #learn(run: RunState, task: DeploymentTask): void {
    run.tasks.set(targetKey(task.stepId, task.machineId ?? ''), task);
    if (task.status === 'Running') run.running.set(task.id, task);
    else run.running.delete(task.id);
    run.scheduler.set(task.stepId, task.machineId ?? '', task.status);
  }

  /** Folds committed decisions into the run; anything but what was decided means it is stale: dropped. */
  #applyWritten(deploymentId: string, run: RunState, decisions: Decisions, written: Written): void {
    if (written.started.length !== decisions.start.length || written.skipped !== decisions.skip.length) {
      this.#runs.forget(deploymentId);
      return;
    }
    for (const task of written.started) this.#learn(run, task);
    for (const { task } of decisions.skip) this.#learn(run, { ...task, status: 'Skipped' });
  }

  /**
   * Writes what the scheduler decided — skips, then Pending → Running starts with their log lines
   * after `lines` and their machines' state read back, in one record statement. Runs inside the
   * caller's transaction when there is more than that statement to commit with it. Resolves once
   * the record statement is sent, so a transaction's COMMIT follows it at once (a round trip
   * less); `answered` must be awaited, after the commit: when it fails, the COMMIT rolled the whole
   * transaction back.
   */
  async #writeDecisions(
    tx: Store,
    deploymentId: string,
    decisions: Decisions,
    lines: NewLogEntry[],
    now: Date,
    /** The advance ends with this write: release the lease in it. */
    releaseLease = false,
  ): Promise<{ answered: Promise<Written> }> {
    let skipped = 0;
    for (const { task, message } of decisions.skip) {
      if (
        !(await tx.deploymentTasks.transition(task.id, ['Pending'], { status: 'Skipped', message, finishedUtc: now }))
      )
        continue;
      skipped++;
      lines.push(stepParentEntry(deploymentId, task), {
        level: 'Information',
        data: `${task.stepName} on ${task.machineName}: ${message}`,
        stepId: task.stepId,
        parentLogId: stepParentLogId(deploymentId, task.stepId),
      });
    }
    const starts: TaskStarts = {
      taskIds: decisions.start.map((task) => task.id),
      lines: startLines(deploymentId, decisions.start),
    };
    const { answered } = await tx.deploymentLogs.sendRecord(
      deploymentId,
      [{ entries: lines, starts }],
      now,
      releaseLease ? { releaseBy: this.#deps.replicaId } : {},
    );
    const written = answered.then((result): Written => {
      const machines = new Map<string, TargetMachine>();
      for (const machine of result.started.values()) if (machine) machines.set(machine.machineId, machine);
      return {
        started: asStarted(
          decisions.start.filter((task) => result.started.has(task.id)),
          now,
        ),
        skipped,
        machines,
        released: result.released,
      };
    });
    written.catch(() => undefined);
    return { answered: written };
  }

  /**
   * After the decisions committed: wake the agents of started tasks; an offline machine fails
   * its part at once, saying so (no hang). True when statuses changed without anything left
   * running to wake us (skips only, offline failures): the scheduler should look again now.
   */
  async #afterDecisions(deployment: Deployment, written: Written, now: Date): Promise<boolean> {
    const { machines } = written;
    let offline = 0;
    const dispatched: Array<{ taskId: string; machineId: string }> = [];
    const handed: DispatchedTask[] = [];
    for (const task of written.started) {
      const machine = machines.get(task.machineId!);
      if (machine && machine.enabled && isAgentOnline(machine, now)) {
        dispatched.push({ taskId: task.id, machineId: machine.machineId });
        handed.push({ task, deployment, machine });
        continue;
      }
      offline++;
      await this.finishTask(
        task.id,
        {
          status: 'Failed',
          exitCode: null,
          message: `Machine '${task.machineName}' is offline: its agent has not connected recently`,
        },
        task,
      );
    }
    if (handed.length > 0) this.#deps.onDispatched?.(handed);
    await this.#announceDispatched(deployment.id, dispatched);
    return offline > 0 || (written.skipped > 0 && written.started.length === 0);
  }

  /** One event per slice of the tasks, each given its turns before the next (DISPATCH_SLICE). */
  async #announceDispatched(deploymentId: string, tasks: Array<{ taskId: string; machineId: string }>): Promise<void> {
    if (tasks.length === 0) return;
    this.#deps.metrics.tasksDispatched(tasks.length);
    for (let at = 0; at < tasks.length; at += DISPATCH_SLICE) {
      await this.#deps.bus.publishEvent(EventSubject.tasksDispatched(deploymentId), {
        v: 1,
        type: 'tasks.dispatched',
        deploymentId,
        tasks: tasks.slice(at, at + DISPATCH_SLICE),
      });
      // Two turns of the event loop before the next slice, and before what follows the last (the
      // run's state for 10,000 tasks, the next tasks' insert): in the first the gateway's handler
      // here sends the slice's RunTasks, in the second HTTP/2 writes them to the agents' sockets.
      // At 10,000 the handler waited 7-33 ms for that work.
      await nextTurn();
      await nextTurn();
    }
  }

  /** Fails running tasks whose agent has been silent too long; true when any was failed. */
  async #failLostTasks(tasks: DeploymentTask[], now: Date, lostMs: number): Promise<boolean> {
    let failed = false;
    for (const task of tasks.filter((t) => t.status === 'Running' && t.machineId)) {
      const dispatched = task.dispatchedUtc?.getTime() ?? now.getTime();
      // Dispatched recently: not lost whatever the agent's last-seen time. Skipping the lookup
      // keeps each wake-up of a wide deployment from reading every machine again.
      if (now.getTime() - dispatched <= lostMs) continue;
      const machine = await this.#deps.store.deploymentMachines.get(task.machineId!);
      const lastSeen = machine?.lastSeenUtc?.getTime() ?? 0;
      if (now.getTime() - Math.max(lastSeen, dispatched) > lostMs) {
        failed =
          (await this.finishTask(
            task.id,
            {
              status: 'Failed',
              exitCode: null,
              message: `Lost contact with the agent on '${task.machineName}': offline for more than ${Math.round(lostMs / 1000)} s`,
            },
            task,
          )) || failed;
      }
    }
    return failed;
  }

  /** Cancel from any non-final state: pending work is dropped, running scripts are stopped by their agents. */
  async #cancel(deployment: Deployment): Promise<void> {
    const { store, clock, bus, timing } = this.#deps;
    const now = clock.now();
    // Every target stored first, so each not started is recorded Cancelled.
    const tasks = await this.#allTasks(
      deployment.id,
      deployment.status === 'Running' ? await this.#plan(deployment.id) : null,
    );
    for (const task of tasks.filter((t) => t.status === 'Pending')) {
      await store.deploymentTasks.transition(task.id, ['Pending'], {
        status: 'Cancelled',
        message: 'Cancelled before it started',
        finishedUtc: now,
      });
    }
    const running = tasks.filter((t) => t.status === 'Running');
    const graceOver =
      now.getTime() - (deployment.cancellationRequestedUtc?.getTime() ?? now.getTime()) > timing.cancelGraceMs;
    for (const task of running) {
      if (graceOver) {
        await this.finishTask(
          task.id,
          {
            status: 'Cancelled',
            exitCode: null,
            message: `The agent on '${task.machineName}' did not confirm the cancellation in time`,
          },
          task,
        );
      } else if (task.machineId) {
        await bus.publishEvent(EventSubject.taskCancel(task.id), {
          v: 1,
          type: 'task.cancel',
          taskId: task.id,
          deploymentId: deployment.id,
          machineId: task.machineId,
        });
      }
    }
    const stillRunning = (await store.deploymentTasks.listForDeployment(deployment.id)).some(
      (t) => t.status === 'Running',
    );
    if (!stillRunning) await this.#finish(deployment, 'Cancelled', () => 'The deployment was cancelled', 'Warning');
  }

  /**
   * Records the end of a task (from its agent, or decided here) exactly once, with its log line,
   * in one statement shared with the deployment's other reports. `known`: the task as the caller
   * already read it. Returns false when the task had already finished.
   */
  async finishTask(
    taskId: string,
    result: TaskEnd,
    known?: DeploymentTask,
    /** An agent's result covers its lines 1..lastLogSeq: the task ends only once they are stored. */
    lastLogSeq: number | null = null,
  ): Promise<boolean> {
    const task = known ?? (await this.#deps.store.deploymentTasks.get(taskId));
    if (!task) return false;
    const { finished } = await this.#writeFinish(task, result, lastLogSeq, this.#deps.clock.now());
    return finished.has(task.id);
  }

  /**
   * finishTask for a replica about to advance the deployment itself (nothing else advances it
   * here): the statement that records the end also takes the lease when this replica knows the
   * deployment's run, so the window's next task starts without a claim statement (a window
   * change at small windows was three statements in a row: the end, the claim, the start).
   * `claimed`: what advance() takes as `preclaimed` (null: not taken; wake it through the bus).
   * Known to have ended: this task and the others whose ends the same statement recorded (a
   * burst of results shares one), so that advance refills every slot they freed rather than one;
   * an end recorded by another statement or replica is learned at its own wake-up, which claims
   * as usual.
   */
  async finishAndClaim(
    task: DeploymentTask,
    result: TaskEnd,
    lastLogSeq: number | null,
  ): Promise<{ finished: boolean; claimed: Claimed | null }> {
    const { clock, replicaId, timing } = this.#deps;
    const now = clock.now();
    const run = this.#runs.get(task.deploymentId);
    const base = run?.deployment;
    const claim = base ? { owner: replicaId, leaseUntil: new Date(now.getTime() + timing.leaseMs) } : undefined;
    const outcome = await this.#writeFinish(task, result, lastLogSeq, now, claim);
    const finished = outcome.finished.has(task.id);
    if (!base || !outcome.claimed) return { finished, claimed: null };
    // The tasks as the run knew them (Running), moved as the statement moved them; one the run
    // does not know as running is left to the next claim's read.
    const ended = outcome.endedWithClaim.flatMap((end) => {
      const known = end.taskId === task.id ? task : run.running.get(end.taskId);
      if (!known) return [];
      return [
        { ...known, status: end.status, exitCode: end.exitCode, message: end.message, finishedUtc: end.finishedUtc },
      ];
    });
    return {
      finished,
      claimed: {
        ...base,
        status: outcome.claimed.status,
        cancellationRequestedUtc: outcome.claimed.cancellationRequestedUtc,
        previousLeaseOwner: outcome.claimed.previousLeaseOwner,
        advanceSeq: outcome.claimed.advanceSeq,
        ended,
      },
    };
  }

  /** Running → the result's status with its line, in the deployment's next progress statement. */
  async #writeFinish(task: DeploymentTask, result: TaskEnd, lastLogSeq: number | null, now: Date, claim?: RecordClaim) {
    const plan = await this.#plan(task.deploymentId);
    const errorAction = plan ? errorActionOf(plan, task.stepId) : 'Stop';
    const level: LogLevel =
      result.status === 'Succeeded'
        ? 'Information'
        : result.status === 'Cancelled'
          ? 'Warning'
          : errorAction === 'Continue'
            ? 'Warning'
            : 'Error';
    return this.#deps.progress.write(
      task.deploymentId,
      [],
      [
        {
          taskId: task.id,
          status: result.status,
          exitCode: result.exitCode,
          message: result.message,
          finishedUtc: now,
          line: {
            level,
            data: `${task.stepName} on ${task.machineName}: ${result.message}`,
            stepId: task.stepId,
            parentLogId: task.parentLogId,
            taskId: task.id,
          },
          lastLogSeq,
        },
      ],
      [],
      claim,
    );
  }
}

interface Decisions {
  start: DeploymentTask[];
  skip: Array<{ task: DeploymentTask; message: string }>;
  outcome: NextActions['deploymentOutcome'];
}

interface Written {
  started: DeploymentTask[];
  skipped: number;
  /** The started tasks' machines as the starting statement read them. */
  machines: ReadonlyMap<string, TargetMachine>;
  /** The statement released the deployment's lease. */
  released: boolean;
}

const NOTHING_WRITTEN: Written = { started: [], skipped: 0, machines: new Map(), released: false };

const byTarget = (tasks: DeploymentTask[]) => new Map(tasks.map((t) => [targetKey(t.stepId, t.machineId ?? ''), t]));
/** The schedulers' statuses: Pending is what a missing key reads, so only the others are kept. */
const statusesOf = (tasks: DeploymentTask[]) => {
  const statuses = new Map<string, TaskStatus>();
  for (const t of tasks) if (t.status !== 'Pending') statuses.set(targetKey(t.stepId, t.machineId ?? ''), t.status);
  return statuses;
};

/** The scheduler's answer for these tasks, as the tasks to start and to skip. */
function decide(plan: Plan, tasks: DeploymentTask[]): Decisions {
  return toDecisions(inMap(byTarget(tasks)), nextActions(plan, statusesOf(tasks)));
}

/**
 * The decisions split after `size` starts: the head keeps the skips and the outcome, the tail
 * (null when there is nothing past `size`) is only starts. The scheduler's starts are in plan
 * order, so the head is what would start first in any case.
 */
function sliceStarts(decisions: Decisions, size: number): { head: Decisions; tail: Decisions | null } {
  if (decisions.start.length <= size) return { head: decisions, tail: null };
  return {
    head: { ...decisions, start: decisions.start.slice(0, size) },
    tail: { start: decisions.start.slice(size), skip: [], outcome: undefined },
  };
}

/** The same from what a run knows: costs the window, not the deployment's size. */
function decideFor(run: RunState): Decisions {
  return toDecisions(inMap(run.tasks), run.scheduler.next());
}

/** A target's task, by the scheduler's action on it (undefined: no such task). */
type TaskOf = (action: StartAction) => DeploymentTask | undefined;

const inMap =
  (byKey: ReadonlyMap<string, DeploymentTask>): TaskOf =>
  (action) =>
    byKey.get(targetKey(action.stepId, action.machineId));

function toDecisions(taskOf: TaskOf, actions: NextActions): Decisions {
  return {
    start: actions.start.flatMap((start) => taskOf(start) ?? []),
    skip: actions.skip.flatMap((skip) => {
      const task = taskOf(skip);
      return task ? [{ task, message: skip.message }] : [];
    }),
    outcome: actions.deploymentOutcome,
  };
}

/** The tasks as they are once started at `now` (what a record statement's starts wrote). */
const asStarted = (tasks: DeploymentTask[], now: Date): DeploymentTask[] =>
  tasks.map((task) => ({ ...task, status: 'Running', parentLogId: task.id, dispatchedUtc: now, startedUtc: now }));

/**
 * What the log says of these starts: "Step 'X'" once per deployment (fixed id, whichever batch
 * brings it first), then "Running 'X' on M" under it for each task; each line with the tasks
 * whose start it needs (`when`).
 */
function startLines(deploymentId: string, tasks: readonly DeploymentTask[]): TaskStarts['lines'] {
  const lines: Array<{ entry: NewLogEntry; when: string[] }> = [];
  const byStep = new Map<string, DeploymentTask[]>();
  for (const task of tasks) {
    const stepTasks = byStep.get(task.stepId);
    if (stepTasks) stepTasks.push(task);
    else byStep.set(task.stepId, [task]);
  }
  for (const stepTasks of byStep.values())
    lines.push({ entry: stepParentEntry(deploymentId, stepTasks[0]!), when: stepTasks.map((t) => t.id) });
  for (const task of tasks) {
    lines.push({
      entry: {
        id: task.id,
        level: 'Information',
        data: `Running '${task.stepName}' on ${task.machineName}`,
        stepId: task.stepId,
        parentLogId: stepParentLogId(deploymentId, task.stepId),
        taskId: task.id,
      },
      when: [task.id],
    });
  }
  return lines;
}

const deployingLine = (deployment: Deployment): NewLogEntry => ({
  level: 'Information',
  data: `Deploying release to '${deployment.environmentName}'`,
});

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
    return stage.skip
      ? [
          {
            id: stepParentLogId(deploymentId, stage.stepId),
            level: stage.skip.level,
            data: stage.skip.message,
            stepId: stage.stepId,
          },
        ]
      : [];
  }
  const lines: NewLogEntry[] = [];
  for (const member of stage.members) {
    if (member.skip) {
      lines.push({
        id: stepParentLogId(deploymentId, member.stepId),
        level: member.skip.level,
        data: member.skip.message,
        stepId: member.stepId,
      });
      continue;
    }
    if (!stage.noTargets) continue;
    // Counted as the outcome counts it: a Fail is an error unless the step only warns on failure.
    const level: LogLevel =
      stage.noTargets === 'Skip'
        ? 'Information'
        : stage.noTargets === 'Warn' || member.errorAction === 'Continue'
          ? 'Warning'
          : 'Error';
    const what = stage.noTargets === 'Fail' ? 'fails' : 'is skipped';
    lines.push({
      level,
      data: `Step '${member.name}' of rolling group '${stage.name}' ${what}: no machine matches any step of the group`,
      stepId: member.stepId,
    });
  }
  return lines;
}

function sameKeys(keys: ValidationKeys, deployment: Deployment): boolean {
  return (
    keys.releaseId === deployment.releaseId &&
    keys.workspaceId === deployment.workspaceId &&
    keys.environmentId === deployment.environmentId
  );
}
