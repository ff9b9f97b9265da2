// One agent's Connect call on this replica: the server side of the session protocol in
// agent.proto. Inbound messages are handled one at a time, in order, so acks follow the order the
// agent sent; outbound messages go through a queue that respects write() backpressure. Any
// message counts as hearing from the agent (a long log backlog is no silence), and a task's result
// is held back until every line it covers is stored (a deployment is never final before its
// last line).
import * as grpc from '@grpc/grpc-js';
import { newId, toError, type Logger } from '../core/index.ts';
import type { AgentInfo, AgentPort, RunTaskPayload } from '../engine/index.ts';
import { grpcStatus, toGrpcStatus, type GrpcStatus } from './grpc-errors.ts';
import type { AgentMessage, Hello, ServerMessage, TaskResult } from './proto.ts';
import { contiguousRuns, MAX_RUN_BYTES, toAgentLogChunk } from './log-batches.ts';
import { isRefusedMessage, type RefusedMessage } from './message-guard.ts';
import { toAgentTaskResult, toRunTask } from './wire.ts';
import { isWorthRepacing } from './heartbeat-pace.ts';

export type AgentCall = grpc.ServerDuplexStream<AgentMessage, ServerMessage>;

export interface AgentSessionOptions {
  call: AgentCall;
  machineId: string;
  agentPort: AgentPort;
  logger: Logger;
  /**
   * How often the agent beats: `current()` is told in Welcome and, when it has moved enough, in
   * answer to a Heartbeat (HeartbeatPace); `baseMs` is the interval under the replica's cap.
   */
  heartbeat: { baseMs: number; current: () => number };
  /** Called once when the call ends, whoever ended it. */
  onClosed(session: AgentSession): void;
  /** The agent bundle this replica ships (UpgradeAgent names it); null: it sends no upgrades. */
  agentBundle?: AgentBundle | null;
  /** Told of every message received (the connection's liveness watch: a silent connection is pinged). */
  onHeard?: () => void;
}

/** The agent bundle a control plane ships (services/packages AgentDistribution has this shape). */
export interface AgentBundle {
  readonly version: string;
  readonly archiveName: string;
  readonly sha256: string;
  readonly bytes: Buffer;
}

// Inbound flow control: stop reading from the agent while this many messages wait for the
// engine, and read again once the backlog is down to the low mark. Agents keep their own window
// of unacknowledged log bytes (Welcome), so this only bounds a misbehaving one.
// Both in messages and in the bytes they hold (grpc-js buffers up to 16 more decoded messages of
// at most MAX_RECEIVE_BYTES each below us): one session holds a few tens of MiB at most.
const INBOUND_HIGH_WATER = 64;
const INBOUND_LOW_WATER = 16;
const INBOUND_HIGH_WATER_BYTES = 2 * 1024 * 1024;
const INBOUND_LOW_WATER_BYTES = 512 * 1024;
/** The log text an agent may have sent and not had acknowledged (Welcome.max_unacked_log_bytes). */
const AGENT_LOG_WINDOW_BYTES = 1024 * 1024;
/** Hearing from an agent is recorded at most this often (every message counts, few writes), and at every heartbeat interval. */
const SEEN_EVERY_MS = 5_000;
/** A result whose lines do not come within this long is applied anyway, saying lines are missing. */
const RESULT_WAITS_FOR_LINES_MS = 30_000;
/** A heartbeat's check of a call that has sent nothing allocates nothing. */
const NONE: readonly string[] = [];
// An agent that stops reading while we keep producing is broken; end its call rather than grow
// memory without bound (it reconnects and gets everything again from the database).
const MAX_OUTBOX = 10_000;

/** About what a decoded message holds in memory (its byte fields and ~130 bytes per object). */
function footprintOf(message: AgentMessage): number {
  const batch = message.logBatch;
  if (!batch) return 256;
  let bytes = 256 + batch.lines.length * 130;
  for (const line of batch.lines) bytes += line.text.length;
  if (batch.chunk) bytes += batch.chunk.text.length + batch.chunk.streams.length + batch.chunk.timeDeltas.length;
  return bytes;
}

function nonEmpty(value: string): string | undefined {
  return value === '' ? undefined : value;
}

export class AgentSession {
  readonly machineId: string;
  /** Identifies this session in the machine's row: only the current session marks it offline. */
  readonly sessionId = newId();
  readonly #call: AgentCall;
  readonly #port: AgentPort;
  readonly #logger: Logger;
  readonly #options: AgentSessionOptions;
  #closed = false;
  #welcomedHello = false;
  /** Task IDs sent (or known to be running) on this call: a wake-up sends only the others. */
  #sentTaskIds = new Set<string>();
  /** Task IDs a CancelTask was sent for on this call: the next sync sends only new ones. */
  #sentCancelIds = new Set<string>();
  #outbox: ServerMessage[] = [];
  #blocked = false;
  /** Messages received and not handled yet, in order; `#inbound` settles once they are. */
  #queue: AgentMessage[] = [];
  #queuedBytes = 0;
  #inbound: Promise<void> = Promise.resolve();
  /** Settles once the session's end is recorded (see `ended`). */
  #ended: Promise<void> = Promise.resolve();
  #draining = false;
  #paused = false;
  #syncRunning = false;
  #syncAgain = false;
  #lastSeenRecordedMs = 0;
  /** The heartbeat interval this agent was last told (Welcome or HeartbeatPace). */
  #toldHeartbeatMs = 0;
  /** Bytes free in the agent's home, from its latest Heartbeat (recorded with "heard from"). */
  #homeFreeBytes: number | undefined;
  /** The version an UpgradeAgent was sent for on this call (sent once per call). */
  #upgradeSent: string | null = null;
  /** Results whose lines are not all stored yet, by task, since when. */
  readonly #pendingResults = new Map<string, { result: TaskResult; sinceMs: number }>();

  constructor(options: AgentSessionOptions) {
    this.machineId = options.machineId;
    this.#call = options.call;
    this.#port = options.agentPort;
    this.#logger = options.logger;
    this.#options = options;
  }

  get isClosed(): boolean {
    return this.#closed;
  }

  /** Wires the call's events and greets the agent. */
  start(): void {
    const call = this.#call;
    call.on('data', (message: AgentMessage | RefusedMessage) => this.#receive(message));
    call.on('drain', () => this.#flush());
    // The agent half-closed its side: finish what it sent (so its acks go out), then end with OK.
    call.on('end', () => void this.#inbound.then(() => this.close(grpcStatus(grpc.status.OK, 'OK'))));
    // Client cancel or a dropped connection: nothing can be sent any more.
    call.on('cancelled', () => this.#markClosed('cancelled'));
    call.on('close', () => this.#markClosed('closed'));
    call.on('error', (error: unknown) => this.#markClosed('error', error));
    this.#toldHeartbeatMs = this.#options.heartbeat.current();
    this.#send({
      welcome: {
        heartbeatIntervalMs: this.#toldHeartbeatMs,
        acceptsLogChunks: true,
        maxUnackedLogBytes: AGENT_LOG_WINDOW_BYTES,
      },
    });
  }

  /** The agent said Hello: it may be sent work. */
  get isReady(): boolean {
    return this.#welcomedHello && !this.#closed;
  }

  /** Sends RunTask for a task of this machine unless this call already sent it. */
  offerTask(task: RunTaskPayload): void {
    if (!this.isReady || this.#sentTaskIds.has(task.taskId)) return;
    this.#sentTaskIds.add(task.taskId);
    this.#send({ runTask: toRunTask(task) });
  }

  /** Wake-up: sends RunTask for the machine's tasks this call has not sent yet. Coalesces bursts. */
  requestTaskSync(): void {
    if (this.#closed || !this.#welcomedHello) return;
    if (this.#syncRunning) {
      this.#syncAgain = true;
      return;
    }
    this.#syncRunning = true;
    void (async () => {
      try {
        do {
          this.#syncAgain = false;
          await this.#syncTasks();
        } while (this.#syncAgain && !this.#closed);
      } catch (error) {
        this.#fail(error, 'task sync failed');
      } finally {
        this.#syncRunning = false;
      }
    })();
  }

  /**
   * Sends UpgradeAgent when the machine's agent was asked to upgrade to the version this replica
   * ships (a replica of another build leaves it to one that ships it), once per call.
   */
  offerUpgrade(): void {
    if (!this.#options.agentBundle || !this.isReady) return;
    this.#port.pendingUpgrade(this.machineId).then(
      (version) => this.#offerUpgradeTo(version),
      (error: unknown) => this.#logger.warn({ err: toError(error) }, 'reading the pending upgrade failed'),
    );
  }

  #offerUpgradeTo(version: string | null): void {
    const bundle = this.#options.agentBundle;
    if (!bundle || version !== bundle.version || this.#upgradeSent === version || !this.isReady) return;
    this.#upgradeSent = version;
    this.#logger.info({ version }, 'asking the agent to upgrade');
    this.#send({
      upgradeAgent: {
        version,
        bundleName: bundle.archiveName,
        sha256: bundle.sha256,
        sizeBytes: String(bundle.bytes.length),
      },
    });
  }

  /** Tells the agent to stop a task, once per call (harmless when the agent never saw it). */
  cancelTask(taskId: string): void {
    if (this.#sentCancelIds.has(taskId)) return;
    this.#sentCancelIds.add(taskId);
    this.#send({ cancelTask: { taskId, graceMs: 0 } });
  }

  /** Ends the call with this status (OK ends it normally); later messages are ignored. */
  close(status: GrpcStatus): void {
    if (this.#closed) return;
    this.#markClosed('server');
    this.#outbox = [];
    try {
      if (status.code === grpc.status.OK) this.#call.end();
      // grpc-js turns an 'error' on a server stream into the call's final status.
      else this.#call.emit('error', status);
    } catch (error) {
      this.#logger.debug({ err: toError(error) }, 'agent call already ended');
    }
  }

  #markClosed(reason: string, error?: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#outbox = [];
    // What the agent sent and was not handled yet is dropped (it re-sends after reconnecting).
    this.#queue = [];
    this.#queuedBytes = 0;
    this.#logger.info({ reason, ...(error === undefined ? {} : { err: toError(error) }) }, 'agent session ended');
    // After the messages already taken (a result the agent sent just before leaving is stored first).
    if (this.#welcomedHello) {
      this.#ended = this.#inbound
        .then(() => this.#port.disconnected(this.machineId, this.sessionId))
        .catch((failure: unknown) => this.#logger.error({ err: toError(failure) }, 'recording the disconnect failed'));
    }
    this.#options.onClosed(this);
  }

  /**
   * Settles once what the session's end leaves to do is done: the messages taken before it
   * handled and the disconnect recorded. A stopping gateway waits for it, so the database is not
   * closed under it.
   */
  get ended(): Promise<void> {
    return this.#ended;
  }

  #fail(error: unknown, message: string): void {
    if (this.#closed) return;
    this.#logger.error({ err: toError(error) }, message);
    this.close(toGrpcStatus(error));
  }

  #send(message: ServerMessage): void {
    if (this.#closed) return;
    if (this.#blocked) {
      if (this.#outbox.length >= MAX_OUTBOX) {
        this.#fail(
          grpcStatus(grpc.status.RESOURCE_EXHAUSTED, 'The agent is not reading its messages'),
          'agent outbox overflow',
        );
        return;
      }
      this.#outbox.push(message);
      return;
    }
    // write() accepts the message even when it returns false; false only says "wait for drain".
    if (!this.#call.write(message)) this.#blocked = true;
  }

  #flush(): void {
    this.#blocked = false;
    while (!this.#closed && !this.#blocked) {
      const next = this.#outbox.shift();
      if (!next) return;
      if (!this.#call.write(next)) this.#blocked = true;
    }
  }

  #receive(message: AgentMessage | RefusedMessage): void {
    if (this.#closed) return;
    if (isRefusedMessage(message)) {
      this.#logger.warn({ reason: message.refused }, 'agent message refused');
      this.close(grpcStatus(grpc.status.INVALID_ARGUMENT, message.refused));
      return;
    }
    this.#options.onHeard?.();
    const free = Number(message.heartbeat?.homeFreeBytes ?? 0);
    if (free > 0) this.#homeFreeBytes = free;
    this.#noteHeardFrom();
    if (message.payload === 'heartbeat' && this.#welcomedHello) this.#repace();
    // A Heartbeat acknowledges nothing: with nothing before it in the queue and no result waiting
    // for its lines it needs no place there (its check runs off the queue anyway). ~670 a second
    // at 10,000 agents: the queue's promises per message were most of a heartbeat's own cost.
    if (message.payload === 'heartbeat' && this.#welcomedHello && !this.#draining && this.#pendingResults.size === 0) {
      this.#checkTasks();
      return;
    }
    this.#queue.push(message);
    this.#queuedBytes += footprintOf(message);
    if (!this.#paused && (this.#queue.length >= INBOUND_HIGH_WATER || this.#queuedBytes >= INBOUND_HIGH_WATER_BYTES)) {
      this.#paused = true;
      this.#call.pause();
    }
    if (!this.#draining) {
      this.#draining = true;
      this.#inbound = this.#drain();
    }
  }

  /** Handles the queued messages one at a time, in order. */
  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const message = this.#take()!;
        try {
          await this.#handle(message);
        } catch (error) {
          this.#fail(error, 'agent message handling failed');
        }
        if (
          this.#paused &&
          this.#queue.length <= INBOUND_LOW_WATER &&
          this.#queuedBytes <= INBOUND_LOW_WATER_BYTES &&
          !this.#closed
        ) {
          this.#paused = false;
          this.#call.resume();
        }
      }
    } finally {
      this.#draining = false;
    }
  }

  #take(): AgentMessage | undefined {
    const message = this.#queue.shift();
    if (message) this.#queuedBytes -= footprintOf(message);
    return message;
  }

  /**
   * A log batch, with the batches of the same task queued right behind it: while a statement is
   * in flight the agent keeps sending within its window, and all of that is stored at once.
   */
  async #onLogBatches(first: AgentMessage): Promise<void> {
    const taskId = first.logBatch?.taskId;
    if (taskId === undefined) return;
    const chunks = [];
    let bytes = 0;
    for (let message: AgentMessage | undefined = first; message;) {
      const chunk = toAgentLogChunk(message.logBatch!);
      if (chunk) {
        chunks.push(chunk);
        bytes += chunk.text.length;
      }
      const next = this.#queue[0];
      message =
        next?.payload === 'logBatch' && next.logBatch?.taskId === taskId && bytes < MAX_RUN_BYTES
          ? this.#take()
          : undefined;
    }
    if (chunks.length === 0) return;
    let seq = 0;
    for (const run of contiguousRuns(chunks)) seq = await this.#port.recordLogs(this.machineId, taskId, run);
    this.#send({ ackLogs: { taskId, seq: String(seq) } });
    if (this.#pendingResults.has(taskId)) await this.#offerPendingResult(taskId);
  }

  async #handle(message: AgentMessage): Promise<void> {
    if (!this.#welcomedHello && message.payload !== 'hello') {
      throw grpcStatus(grpc.status.INVALID_ARGUMENT, 'The first message of a Connect call must be Hello');
    }
    switch (message.payload) {
      case 'hello':
        if (message.hello) await this.#onHello(message.hello);
        return;
      case 'heartbeat':
        // Wake-ups are best-effort (core NATS), and a replica can die between starting a task and
        // publishing its wake-up: re-checking here bounds a lost one to one heartbeat interval.
        this.#checkTasks();
        for (const taskId of [...this.#pendingResults.keys()]) await this.#offerPendingResult(taskId);
        return;
      case 'taskAccepted':
        this.#logger.debug({ taskId: message.taskAccepted?.taskId }, 'task accepted');
        return;
      case 'logBatch':
        return this.#onLogBatches(message);
      case 'taskResult':
        if (message.taskResult) await this.#recordResult(message.taskResult);
        return;
      case 'upgradeStatus': {
        const report = message.upgradeStatus;
        if (report && (report.state === 'STARTED' || report.state === 'FAILED')) {
          this.#logger.info(
            { version: report.version, state: report.state, reason: report.message },
            'agent upgrade status',
          );
          await this.#port.upgradeReported(this.machineId, {
            version: report.version.slice(0, 64),
            state: report.state,
            message: report.message,
          });
        }
        return;
      }
      case undefined:
        // A newer agent's message this build does not know: ignoring it keeps old replicas usable.
        this.#logger.warn('agent message without a known payload ignored');
        return;
    }
  }

  async #onHello(hello: Hello): Promise<void> {
    const info: AgentInfo = {
      agentVersion: nonEmpty(hello.agentVersion),
      os: nonEmpty(hello.os),
      hostname: nonEmpty(hello.hostname),
    };
    // Health facts: an older agent sends neither (and then its stored ones are kept).
    const free = Number(hello.homeFreeBytes);
    if (hello.interpreters.length > 0 || free > 0) {
      info.interpreters = hello.interpreters.filter((name) => /^[\w.-]{1,32}$/.test(name)).slice(0, 16);
      if (free > 0) info.homeFreeBytes = free;
    }
    const { pendingUpgrade } = await this.#port.connected(this.machineId, this.sessionId, info);
    // The agent is already running these: a RunTask would only be answered with TaskAccepted.
    for (const taskId of hello.runningTaskIds) this.#sentTaskIds.add(taskId);
    for (const result of hello.unacknowledgedResults) await this.#recordResult(result);
    this.#welcomedHello = true;
    this.requestTaskSync();
    this.#offerUpgradeTo(pendingUpgrade);
  }

  /**
   * Records a result, or keeps it until the lines it covers are stored (the agent re-sends its
   * unacknowledged lines after Hello, and results may come first there).
   */
  async #recordResult(result: TaskResult): Promise<void> {
    this.#pendingResults.set(result.taskId, {
      result,
      sinceMs: this.#pendingResults.get(result.taskId)?.sinceMs ?? Date.now(),
    });
    await this.#offerPendingResult(result.taskId);
  }

  async #offerPendingResult(taskId: string): Promise<void> {
    const pending = this.#pendingResults.get(taskId);
    if (!pending) return;
    const force = Date.now() - pending.sinceMs >= RESULT_WAITS_FOR_LINES_MS;
    const receipt = await this.#port.recordResult(this.machineId, taskId, toAgentTaskResult(pending.result), { force });
    if (receipt === 'waiting-for-lines') return;
    this.#pendingResults.delete(taskId);
    this.#send({ ackResult: { taskId } });
  }

  /** Answers a Heartbeat with the replica's interval when it moved enough since the agent was told. */
  #repace(): void {
    const wanted = this.#options.heartbeat.current();
    if (!isWorthRepacing(this.#toldHeartbeatMs, wanted)) return;
    this.#toldHeartbeatMs = wanted;
    this.#send({ heartbeatPace: { heartbeatIntervalMs: wanted } });
  }

  /** Every message proves the agent alive: recorded at most every SEEN_EVERY_MS (or heartbeat interval), off the queue. */
  #noteHeardFrom(): void {
    const now = Date.now();
    if (
      !this.#welcomedHello ||
      now - this.#lastSeenRecordedMs < Math.min(SEEN_EVERY_MS, this.#options.heartbeat.baseMs)
    )
      return;
    this.#lastSeenRecordedMs = now;
    this.#port
      .heartbeat(this.machineId, { homeFreeBytes: this.#homeFreeBytes })
      .catch((error: unknown) =>
        this.#logger.warn({ err: toError(error) }, 'recording that the agent was heard from failed'),
      );
  }

  /**
   * A heartbeat's check: the machine's running tasks (one batched read for many agents) against
   * what this call sent; a full sync only when one is running that this call has not sent. Off
   * the message queue: the answer comes within about a second.
   */
  #checkTasks(): void {
    if (this.#closed || !this.#welcomedHello) return;
    // Sent tasks that ended are forgotten here rather than by a full sync, which after a
    // deployment to all would be one more read per machine.
    const forgetEnded = this.#forgetterOfSentSoFar();
    this.#port.runningTasksOf(this.machineId).then(
      (running) => {
        if (this.#closed) return;
        forgetEnded(new Set(running.map((task) => task.taskId)));
        const unsent = running.some((task) =>
          task.cancelling ? !this.#sentCancelIds.has(task.taskId) : !this.#sentTaskIds.has(task.taskId),
        );
        if (unsent) this.requestTaskSync();
      },
      (error: unknown) => {
        this.#logger.warn({ err: toError(error) }, 'checking the running tasks failed; reading them in full');
        this.requestTaskSync();
      },
    );
  }

  async #syncTasks(): Promise<void> {
    const forgetEnded = this.#forgetterOfSentSoFar();
    const { run, cancel } = await this.#port.assignmentsFor(this.machineId);
    if (this.#closed) return;
    // Cancels first: a CancelTask for a task the agent never saw makes it refuse a later RunTask.
    for (const taskId of cancel) this.cancelTask(taskId);
    for (const task of run) this.offerTask(task);
    // Forget finished tasks so a long-lived call does not grow.
    forgetEnded(new Set([...cancel, ...run.map((task) => task.taskId)]));
  }

  /**
   * Takes note of the RunTasks and CancelTasks sent so far, before a read of the machine's tasks,
   * and returns what forgets those of them the read does not show (they have ended: a task is
   * Running before its RunTask goes out, and task IDs are never reused). One sent while the read
   * was in flight may be missing from it without having ended, and is kept: forgetting it would
   * send it again at the next sync.
   */
  #forgetterOfSentSoFar(): (stillAssigned: ReadonlySet<string>) => void {
    const sentBefore = this.#sentTaskIds.size > 0 ? [...this.#sentTaskIds] : NONE;
    const cancelsBefore = this.#sentCancelIds.size > 0 ? [...this.#sentCancelIds] : NONE;
    return (stillAssigned) => {
      for (const taskId of sentBefore) if (!stillAssigned.has(taskId)) this.#sentTaskIds.delete(taskId);
      for (const taskId of cancelsBefore) if (!stillAssigned.has(taskId)) this.#sentCancelIds.delete(taskId);
    };
  }
}
