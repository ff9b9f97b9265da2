// Gives ServerMessages their meaning on the agent: task_id idempotency, per-task log sequencing
// and batching, acknowledgements, re-sending after reconnect, and recovery after a restart.
// Rule everywhere here: persist to the journal FIRST, then send.
import { mkdirSync, rmSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { CancelTask, RunTask, ServerMessage } from '../connection/index.ts';
import type { AgentLink, HelloState, SessionHandler, SessionSettings } from '../connection/index.ts';
import { ChunkBuilder, lastSeqOf, toWireChunk, toWireLines, type StoredChunk } from './log-chunks.ts';
import { createLineMasker, type Masker } from './mask.ts';
import type { PackageCache } from './package-cache.ts';
import { killOrphanGroup } from './process-group.ts';
import { isSafePathSegment } from './safe-name.ts';
import { StepExecution, withPackageFolder, type LogStream, type TaskOutcome } from './step-execution.ts';
import { SpareEntries } from './spare-entries.ts';
import type { TaskJournal, TaskRecord } from './task-journal.ts';
import { toWireResult } from './wire.ts';

export const RESTARTED_MESSAGE = 'agent restarted during the step';

export interface TaskManagerOptions {
  readonly journal: TaskJournal;
  readonly packages: PackageCache;
  readonly workRoot: string;
  /** Substituted scripts live here only while they run; emptied at start (a crash may leave some). */
  readonly scriptsRoot: string;
  readonly baseEnv: Readonly<Record<string, string>>;
  readonly logger: Logger;
  /**
   * Log lines are sent at least this often while a script writes (default 25 ms: what someone
   * watching the live log waits for; the control plane coalesces a deployment's writes)…
   */
  readonly flushIntervalMs?: number;
  /** …or as soon as this much text is waiting (default 64 KiB). */
  readonly maxBatchBytes?: number;
  /**
   * A finished task's tombstone (which refuses a repeated task id) and its work folder are kept
   * this long after it was acknowledged, a cached package version this long after its last use
   * (default 7 days); then they are removed.
   */
  readonly retentionMs?: number;
  /** How often a running agent looks for tasks past retention (default hourly; also at start). */
  readonly pruneEveryMs?: number;
  /** The clock for acceptance, finish and retention times (default Date.now; tests move it). */
  readonly now?: () => number;
  /** Most bytes one package may unpack to (GANTRY_AGENT_MAX_UNPACKED_BYTES); undefined: the default. */
  readonly maxUnpackedBytes?: number | undefined;
}

interface ActiveTask {
  readonly record: TaskRecord;
  /** Masks Sensitive values in a chunk's text (never across lines: it keeps the line count). */
  readonly mask: Masker;
  lastSeq: number;
  appendedSeq: number;
  sentSeq: number;
  lastNanos: bigint;
  /** Lines not journaled yet (the next chunk). */
  pending: ChunkBuilder | undefined;
  flushTimer?: NodeJS.Timeout;
  /**
   * When defined: exactly the chunks (sentSeq, appendedSeq], kept in memory for the common case.
   * Undefined after a reconnect or a large backlog: they are re-read from the journal.
   */
  unsent: StoredChunk[] | undefined;
  unsentBytes: number;
  /** Journaled chunks not acknowledged yet (their last seq and text size): the task's backlog. */
  unacknowledged: Array<{ lastSeq: number; bytes: number }>;
  unacknowledgedBytes: number;
  resultSent: boolean;
  execution?: StepExecution;
  done?: Promise<void>;
}

const NOT_CONNECTED: AgentLink = { trySend: () => false };

/** Spares' folder inside the work and scripts folders: a task or deployment id never starts with '.'. */
const SPARE_FOLDER = '.spare';

/** Unsent chunks kept in memory per task; a larger backlog waits in the journal only. */
const UNSENT_MEMORY_BYTES = 8 * 1024 * 1024;
/** Log text sent and not yet acknowledged when the Welcome does not say (flow control). */
const DEFAULT_LOG_WINDOW_BYTES = 1024 * 1024;
/**
 * While connected, a task whose lines not yet stored exceed this stops having its output read
 * (its script waits on the pipe) until they are down to half: a script that prints faster than
 * its lines can be stored is slowed to that speed, and every line it prints is visible within
 * about this much text — instead of a backlog of minutes on disk. Offline, output is journaled.
 */
const BACKLOG_BYTES = 1024 * 1024;

export class TaskManager implements SessionHandler {
  readonly #options: TaskManagerOptions;
  readonly #now: () => number;
  readonly #flushIntervalMs: number;
  readonly #maxBatchBytes: number;
  readonly #tasks = new Map<string, ActiveTask>();
  #link: AgentLink = NOT_CONNECTED;
  #stopping = false;
  /** An upgrade is under way: no new task is accepted (the control plane offers them again later). */
  #paused = false;
  #lastPruneMs = 0;
  /** What the current session's control plane said in its Welcome. */
  #session: SessionSettings = { acceptsLogChunks: false, maxUnackedLogBytes: DEFAULT_LOG_WINDOW_BYTES };
  /** Chunks sent on this session and not acknowledged yet: the flow-control window. */
  #inFlight: Array<{ taskId: string; lastSeq: number; bytes: number }> = [];
  #inFlightBytes = 0;
  /** A session is welcomed: output is regulated by the backlog only while connected. */
  #connected = false;
  /** Made at the first task, after recover() emptied the scripts folder (spare-entries.ts). */
  #spares: { folders: SpareEntries; files: SpareEntries } | undefined;

  constructor(options: TaskManagerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#flushIntervalMs = options.flushIntervalMs ?? 25;
    this.#maxBatchBytes = options.maxBatchBytes ?? 64 * 1024;
    mkdirSync(options.scriptsRoot, { recursive: true, mode: 0o700 });
  }

  /**
   * Spares ready to take (tests): a spare is on disk before it is ready (its file is created, then
   * closed), so counting files on disk does not say a task would take one.
   */
  get sparesReady(): { folders: number; files: number } {
    return { folders: this.#spares?.folders.ready ?? 0, files: this.#spares?.files.ready ?? 0 };
  }

  attach(link: AgentLink): void {
    this.#link = link;
  }

  /**
   * Run once at start-up, before connecting: tasks that were accepted or running when the agent
   * died are FAILED (never re-run, their orphaned process group killed); finished ones wait for
   * their acknowledgements again.
   */
  recover(): void {
    const journal = this.#options.journal;
    // Scripts of the previous agent process: their processes are killed below, and none may stay
    // on disk (they hold substituted Sensitive values).
    rmSync(this.#options.scriptsRoot, { recursive: true, force: true });
    mkdirSync(this.#options.scriptsRoot, { recursive: true, mode: 0o700 });
    this.#prune();
    for (const record of journal.all()) {
      if (record.forgotten) continue;
      const task = this.#activate(record, []);
      if (record.status === 'finished') continue;
      if (record.pid !== undefined && killOrphanGroup(record.pid, record.pidStartTicks)) {
        this.#options.logger.warn(
          { taskId: record.taskId, pid: record.pid },
          'killed the script left running by the previous agent process',
        );
      }
      this.#write(task, 'SYSTEM', `The ${RESTARTED_MESSAGE}; the step is not run again`);
      this.#finish(task, { outcome: 'FAILED', exitCode: -1, message: RESTARTED_MESSAGE });
    }
  }

  hello(): HelloState {
    const runningTaskIds: string[] = [];
    const unacknowledgedResults: HelloState['unacknowledgedResults'] = [];
    for (const task of this.#tasks.values()) {
      const { record } = task;
      if (record.status !== 'finished') runningTaskIds.push(record.taskId);
      else if (record.result && !record.resultAcknowledged) {
        unacknowledgedResults.push(toWireResult(record.taskId, record.result));
        task.resultSent = true;
      }
    }
    return { runningTaskIds, unacknowledgedResults };
  }

  onWelcome(settings: SessionSettings): void {
    this.#connected = true;
    this.#session = {
      acceptsLogChunks: settings.acceptsLogChunks,
      maxUnackedLogBytes: settings.maxUnackedLogBytes > 0 ? settings.maxUnackedLogBytes : DEFAULT_LOG_WINDOW_BYTES,
    };
  }

  onWritable(): void {
    for (const task of this.#tasks.values()) this.#pump(task);
  }

  onDisconnected(): void {
    this.#connected = false;
    this.#inFlight = [];
    this.#inFlightBytes = 0;
    for (const task of this.#tasks.values()) {
      task.sentSeq = task.record.logsAcknowledgedSeq;
      task.unsent = undefined;
      task.resultSent = false;
      // Offline, scripts go on and their output is journaled (the wait would be unbounded).
      this.#regulateOutput(task);
    }
  }

  onMessage(message: ServerMessage): void {
    if (message.runTask) this.#runTask(message.runTask);
    else if (message.cancelTask) this.#cancelTask(message.cancelTask);
    else if (message.ackResult)
      this.#acknowledge(message.ackResult.taskId, (record) => (record.resultAcknowledged = true));
    else if (message.ackLogs) {
      const { taskId } = message.ackLogs;
      const seq = Number(message.ackLogs.seq);
      this.#releaseWindow(taskId, seq);
      this.#acknowledge(taskId, (record, task) => {
        record.logsAcknowledgedSeq = Math.max(record.logsAcknowledgedSeq, seq);
        if (seq > task.sentSeq) {
          task.sentSeq = Math.min(seq, task.appendedSeq);
          task.unsent = undefined;
        }
      });
      // Room in the window: the backlog of every task may go on.
      this.onWritable();
    }
  }

  /** Tasks accepted and not finished (for tests and shutdown). */
  runningTaskIds(): string[] {
    return [...this.#tasks.values()]
      .filter((task) => task.record.status !== 'finished')
      .map((task) => task.record.taskId);
  }

  /** Accept no new task (an upgrade waits for the running ones); RunTask is left unanswered meanwhile. */
  pauseTasks(): void {
    this.#paused = true;
  }

  resumeTasks(): void {
    this.#paused = false;
  }

  /** Resolves once no task is running (with tasks paused, it comes). */
  async idle(): Promise<void> {
    const awaited = new Set<Promise<void>>();
    for (;;) {
      const running = [...this.#tasks.values()]
        .filter((task) => task.record.status !== 'finished' && task.done && !awaited.has(task.done))
        .map((task) => task.done!);
      if (running.length === 0) return;
      for (const done of running) awaited.add(done);
      await Promise.all(running);
    }
  }

  /** Stops every running script (TERM, KILL after graceMs) and waits until their results are stored. */
  async shutdown(graceMs: number): Promise<void> {
    this.#stopping = true;
    const done: Promise<void>[] = [];
    for (const task of this.#tasks.values()) {
      task.execution?.stop('shutdown', graceMs);
      if (task.done) done.push(task.done);
    }
    await Promise.all(done);
    for (const task of this.#tasks.values()) clearTimeout(task.flushTimer);
  }

  #runTask(run: RunTask): void {
    const { taskId, deploymentId } = run;
    if (!isSafePathSegment(taskId) || !isSafePathSegment(deploymentId)) {
      this.#options.logger.warn({ taskId, deploymentId }, 'refused a task with an unusable id');
      this.#link.trySend({
        taskResult: {
          taskId,
          outcome: 'FAILED',
          exitCode: -1,
          message: 'The task or deployment id is not usable as a folder name',
        },
      });
      return;
    }
    const known = this.#tasks.get(taskId);
    if (known) {
      // Duplicate delivery: never run twice. Running → confirm; finished → result again.
      if (known.record.status !== 'finished') this.#link.trySend({ taskAccepted: { taskId } });
      known.resultSent = false;
      this.#pump(known);
      return;
    }
    const tombstone = this.#options.journal.get(taskId);
    if (tombstone?.result) {
      this.#link.trySend({ taskResult: toWireResult(taskId, tombstone.result) });
      return;
    }
    if (this.#stopping) return; // the control plane will see the task again after we restart
    if (this.#paused) {
      // Upgrading: the next session (the new agent's, or this one's after a failed upgrade) gets it.
      this.#options.logger.info({ taskId, deploymentId }, 'task not accepted: upgrading the agent');
      return;
    }
    const record: TaskRecord = {
      taskId,
      deploymentId,
      status: 'accepted',
      acceptedUnixMs: this.#now(),
      resultAcknowledged: false,
      logsAcknowledgedSeq: 0,
      forgotten: false,
    };
    this.#options.journal.save(record);
    const task = this.#activate(
      record,
      run.sensitiveValues.map((value) => withPackageFolder(value, run, this.#options.workRoot)),
    );
    this.#link.trySend({ taskAccepted: { taskId } });
    this.#options.logger.info({ taskId, deploymentId, step: run.stepName }, 'task accepted');
    task.done = this.#execute(task, run);
  }

  async #execute(task: ActiveTask, run: RunTask): Promise<void> {
    const { record } = task;
    const { workRoot, scriptsRoot } = this.#options;
    // A new deployment's task takes two folders; a few more cover tasks that start together.
    this.#spares ??= {
      folders: new SpareEntries(path.join(workRoot, SPARE_FOLDER), 'folder', 4),
      files: new SpareEntries(path.join(scriptsRoot, SPARE_FOLDER), 'file', 2),
    };
    const execution = new StepExecution(run, {
      workRoot,
      scriptsRoot,
      spares: this.#spares,
      packages: this.#options.packages,
      baseEnv: this.#options.baseEnv,
      maxUnpackedBytes: this.#options.maxUnpackedBytes,
      write: (stream, text) => this.#write(task, stream, text),
      // One journal write per start: 'running' and the pid that identifies the script's group
      // after a crash are recorded together (each write is a file replace, ~1–2 ms on a VM disk).
      onScriptStarted: (pid, startTicks) => {
        record.status = 'running';
        record.pid = pid;
        record.pidStartTicks = startTicks;
        this.#options.journal.save(record);
      },
    });
    task.execution = execution;
    const outcome = await execution.run();
    this.#finish(task, outcome);
    this.#options.logger.info(
      { taskId: record.taskId, outcome: outcome.outcome, exitCode: outcome.exitCode },
      'task finished',
    );
  }

  #cancelTask(cancel: CancelTask): void {
    const graceMs = cancel.graceMs > 0 ? cancel.graceMs : 10_000;
    const known = this.#tasks.get(cancel.taskId);
    if (known?.execution && known.record.status !== 'finished') {
      known.execution.stop('cancelled', graceMs);
      return;
    }
    if (known || this.#options.journal.get(cancel.taskId) || !isSafePathSegment(cancel.taskId)) {
      if (known) {
        known.resultSent = false;
        this.#pump(known);
      }
      return;
    }
    // Never seen: remember it as cancelled so a RunTask arriving later does not run it.
    const record: TaskRecord = {
      taskId: cancel.taskId,
      deploymentId: '',
      status: 'accepted',
      acceptedUnixMs: this.#now(),
      resultAcknowledged: false,
      logsAcknowledgedSeq: 0,
      forgotten: false,
    };
    this.#options.journal.save(record);
    this.#finish(this.#activate(record, []), {
      outcome: 'CANCELLED',
      exitCode: -1,
      message: 'The step was cancelled before it started',
    });
  }

  /**
   * Acknowledgements are kept in memory until the task is done with, then written once (the
   * tombstone). One lost in a crash only means a re-send, which the control plane ignores
   * (lines are stored once by seq, a result once per task): not worth a journal write each.
   */
  #acknowledge(taskId: string, apply: (record: TaskRecord, task: ActiveTask) => void): void {
    const task = this.#tasks.get(taskId);
    if (!task) return;
    apply(task.record, task);
    const { record } = task;
    if (
      record.status === 'finished' &&
      record.resultAcknowledged &&
      record.logsAcknowledgedSeq >= (record.result?.lastLogSeq ?? 0)
    ) {
      this.#options.journal.forget(record);
      this.#tasks.delete(taskId);
      if (this.#now() - this.#lastPruneMs >= (this.#options.pruneEveryMs ?? 3600 * 1000)) this.#prune();
    }
  }

  /**
   * Drops what is past retention: tombstones, their work folders and cached package versions no
   * task has used since (extracted and downloaded packages add up on a machine deployed to every
   * day). Files are removed in the background.
   */
  #prune(): void {
    this.#lastPruneMs = this.#now();
    const { journal, packages, workRoot, logger } = this.#options;
    const cutoff = this.#lastPruneMs - (this.#options.retentionMs ?? 7 * 24 * 3600 * 1000);
    packages
      .prune(cutoff)
      .catch((error: unknown) => logger.warn({ err: error }, 'removing cached packages past retention failed'));
    for (const record of journal.prune(cutoff)) {
      // A cancel for a task never seen has no deployment, hence no folder.
      if (!isSafePathSegment(record.deploymentId)) continue;
      const deploymentFolder = path.join(workRoot, record.deploymentId);
      rm(path.join(deploymentFolder, record.taskId), { recursive: true, force: true })
        // The deployment's folder goes with its last task (refused while another one is in it).
        .then(() => rmdir(deploymentFolder).catch(() => undefined))
        .catch((error: unknown) =>
          logger.warn({ err: error, taskId: record.taskId }, 'removing a work folder past retention failed'),
        );
    }
  }

  #activate(record: TaskRecord, sensitiveValues: readonly string[]): ActiveTask {
    const lastSeq = this.#options.journal.lastSeq(record.taskId);
    const task: ActiveTask = {
      record,
      mask: createLineMasker(sensitiveValues),
      lastSeq,
      appendedSeq: lastSeq,
      sentSeq: record.logsAcknowledgedSeq,
      lastNanos: 0n,
      pending: undefined,
      unsent: record.logsAcknowledgedSeq >= lastSeq ? [] : undefined,
      unsentBytes: 0,
      unacknowledged: [],
      unacknowledgedBytes: 0,
      resultSent: false,
    };
    this.#tasks.set(record.taskId, task);
    return task;
  }

  #write(task: ActiveTask, stream: LogStream, text: string): void {
    const nanos = unixNanosNow();
    task.lastNanos = nanos > task.lastNanos ? nanos : task.lastNanos;
    task.pending ??= new ChunkBuilder(task.lastSeq + 1);
    task.pending.add(stream, text, task.lastNanos);
    task.lastSeq++;
    // The task's first line goes out at once: it is what a user watching the deployment waits for
    // (promote → first line); later lines are batched.
    if (task.pending.bytes >= this.#maxBatchBytes || task.appendedSeq === 0) this.#flush(task);
    else task.flushTimer ??= setTimeout(() => this.#flush(task), this.#flushIntervalMs);
  }

  /** Journals the pending lines as one chunk (masked), then sends what the window allows. */
  #flush(task: ActiveTask): void {
    clearTimeout(task.flushTimer);
    task.flushTimer = undefined;
    if (task.pending && task.pending.count > 0) {
      const chunk = task.pending.build(task.mask);
      task.pending = undefined;
      this.#options.journal.appendChunk(task.record.taskId, chunk);
      task.appendedSeq = task.lastSeq;
      task.unacknowledged.push({ lastSeq: task.appendedSeq, bytes: chunk.text.length });
      task.unacknowledgedBytes += chunk.text.length;
      this.#regulateOutput(task);
      if (task.unsent) {
        task.unsent.push(chunk);
        task.unsentBytes += chunk.text.length;
        // A backlog this large stays on disk only: it is re-read from the journal as it drains.
        if (task.unsentBytes > UNSENT_MEMORY_BYTES) task.unsent = undefined;
      }
    }
    this.#pump(task);
  }

  /**
   * Sends journaled-but-unsent chunks while the flow-control window has room (at least one chunk
   * in flight whatever its size), then the result once every line is sent.
   */
  #pump(task: ActiveTask): void {
    const { taskId } = task.record;
    while (task.sentSeq < task.appendedSeq) {
      if (this.#inFlight.length > 0 && this.#inFlightBytes >= this.#session.maxUnackedLogBytes) return;
      const chunk = task.unsent
        ? task.unsent[0]
        : this.#options.journal.readChunks(taskId, task.sentSeq, this.#maxBatchBytes)[0];
      if (!chunk) break;
      const sent = this.#session.acceptsLogChunks
        ? this.#link.trySend({ logBatch: { taskId, chunk: toWireChunk(chunk) } })
        : this.#link.trySend({ logBatch: { taskId, lines: toWireLines(chunk) } });
      if (!sent) return;
      if (task.unsent) {
        task.unsent.shift();
        task.unsentBytes -= chunk.text.length;
      }
      task.sentSeq = lastSeqOf(chunk);
      this.#inFlight.push({ taskId, lastSeq: task.sentSeq, bytes: chunk.text.length });
      this.#inFlightBytes += chunk.text.length;
    }
    if (!task.unsent && task.sentSeq >= task.appendedSeq) {
      task.unsent = [];
      task.unsentBytes = 0;
    }
    const { record } = task;
    if (record.status === 'finished' && record.result && !record.resultAcknowledged && !task.resultSent) {
      task.resultSent = this.#link.trySend({ taskResult: toWireResult(taskId, record.result) });
    }
  }

  /** The control plane stored the task's lines up to `seq`: their bytes leave the window and the backlog. */
  #releaseWindow(taskId: string, seq: number): void {
    this.#inFlight = this.#inFlight.filter((sent) => {
      if (sent.taskId !== taskId || sent.lastSeq > seq) return true;
      this.#inFlightBytes -= sent.bytes;
      return false;
    });
    const task = this.#tasks.get(taskId);
    if (!task) return;
    while (task.unacknowledged[0] && task.unacknowledged[0].lastSeq <= seq)
      task.unacknowledgedBytes -= task.unacknowledged.shift()!.bytes;
    this.#regulateOutput(task);
  }

  /** Pauses a task's output while connected and behind by more than BACKLOG_BYTES; resumes at half. */
  #regulateOutput(task: ActiveTask): void {
    const backlog = task.unacknowledgedBytes;
    if (this.#connected && backlog > BACKLOG_BYTES) task.execution?.setOutputPaused(true);
    else if (!this.#connected || backlog <= BACKLOG_BYTES / 2) task.execution?.setOutputPaused(false);
  }

  #finish(task: ActiveTask, outcome: TaskOutcome): void {
    this.#flush(task);
    const { record } = task;
    record.status = 'finished';
    record.finishedUnixMs = this.#now();
    record.pid = undefined;
    record.pidStartTicks = undefined;
    record.result = {
      outcome: outcome.outcome,
      exitCode: outcome.exitCode,
      message: task.mask(outcome.message),
      lastLogSeq: task.lastSeq,
    };
    this.#options.journal.save(record);
    task.resultSent = false;
    this.#pump(task);
  }
}

const NANOS_ANCHOR = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** Wall-clock unix time in ns with hrtime resolution (monotonic within this process). */
function unixNanosNow(): bigint {
  return NANOS_ANCHOR + process.hrtime.bigint();
}
