// Gives ServerMessages their meaning on the agent: task_id idempotency, per-task log sequencing
// and batching, acknowledgements, re-sending after reconnect, and recovery after a restart.
// Rule everywhere here: persist to the journal FIRST, then send.
import { mkdirSync, rmSync } from 'node:fs';
import { rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { CancelTask, RunTask, ServerMessage } from '../connection/index.ts';
import type { AgentLink, HelloState, SessionHandler } from '../connection/index.ts';
import { createMasker, type Masker } from './mask.ts';
import type { PackageCache } from './package-cache.ts';
import { killOrphanGroup } from './process-group.ts';
import { isSafePathSegment } from './safe-name.ts';
import { StepExecution, type LogStream, type TaskOutcome } from './step-execution.ts';
import type { StoredLogLine, TaskJournal, TaskRecord } from './task-journal.ts';
import { toWireLine, toWireResult } from './wire.ts';

export const RESTARTED_MESSAGE = 'agent restarted during the step';

export interface TaskManagerOptions {
  readonly journal: TaskJournal;
  readonly packages: PackageCache;
  readonly workRoot: string;
  /** Substituted scripts live here only while they run; emptied at start (a crash may leave some). */
  readonly scriptsRoot: string;
  readonly baseEnv: Readonly<Record<string, string>>;
  readonly logger: Logger;
  /** Log lines are sent at least this often while a script writes (default 100 ms)… */
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
  /** Most bytes one package may unpack to (GANTRY_AGENT_MAX_UNPACKED_BYTES); undefined: the default. */
  readonly maxUnpackedBytes?: number | undefined;
}

interface ActiveTask {
  readonly record: TaskRecord;
  readonly mask: Masker;
  lastSeq: number;
  appendedSeq: number;
  sentSeq: number;
  lastNanos: bigint;
  pending: StoredLogLine[];
  pendingBytes: number;
  flushTimer?: NodeJS.Timeout;
  /**
   * When defined: exactly the lines (sentSeq, appendedSeq], kept in memory for the common case.
   * Undefined after a reconnect or congestion: the lines are re-read from the journal.
   */
  unsent: StoredLogLine[] | undefined;
  resultSent: boolean;
  execution?: StepExecution;
  done?: Promise<void>;
}

const NOT_CONNECTED: AgentLink = { trySend: () => false };
const UNSENT_MEMORY_LINES = 20_000;

export class TaskManager implements SessionHandler {
  readonly #options: TaskManagerOptions;
  readonly #flushIntervalMs: number;
  readonly #maxBatchBytes: number;
  readonly #tasks = new Map<string, ActiveTask>();
  #link: AgentLink = NOT_CONNECTED;
  #stopping = false;
  #lastPruneMs = 0;

  constructor(options: TaskManagerOptions) {
    this.#options = options;
    this.#flushIntervalMs = options.flushIntervalMs ?? 100;
    this.#maxBatchBytes = options.maxBatchBytes ?? 64 * 1024;
    mkdirSync(options.scriptsRoot, { recursive: true, mode: 0o700 });
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

  onWritable(): void {
    for (const task of this.#tasks.values()) this.#pump(task);
  }

  onDisconnected(): void {
    for (const task of this.#tasks.values()) {
      task.sentSeq = task.record.logsAcknowledgedSeq;
      task.unsent = undefined;
      task.resultSent = false;
    }
  }

  onMessage(message: ServerMessage): void {
    if (message.runTask) this.#runTask(message.runTask);
    else if (message.cancelTask) this.#cancelTask(message.cancelTask);
    else if (message.ackResult)
      this.#acknowledge(message.ackResult.taskId, (record) => (record.resultAcknowledged = true));
    else if (message.ackLogs) {
      const seq = Number(message.ackLogs.seq);
      this.#acknowledge(message.ackLogs.taskId, (record, task) => {
        record.logsAcknowledgedSeq = Math.max(record.logsAcknowledgedSeq, seq);
        if (seq > task.sentSeq) {
          task.sentSeq = Math.min(seq, task.appendedSeq);
          task.unsent = undefined;
        }
      });
    }
  }

  /** Tasks accepted and not finished (for tests and shutdown). */
  runningTaskIds(): string[] {
    return [...this.#tasks.values()]
      .filter((task) => task.record.status !== 'finished')
      .map((task) => task.record.taskId);
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
    const record: TaskRecord = {
      taskId,
      deploymentId,
      status: 'accepted',
      acceptedUnixMs: Date.now(),
      resultAcknowledged: false,
      logsAcknowledgedSeq: 0,
      forgotten: false,
    };
    this.#options.journal.save(record);
    const task = this.#activate(record, run.sensitiveValues);
    this.#link.trySend({ taskAccepted: { taskId } });
    this.#options.logger.info({ taskId, deploymentId, step: run.stepName }, 'task accepted');
    task.done = this.#execute(task, run);
  }

  async #execute(task: ActiveTask, run: RunTask): Promise<void> {
    const { record } = task;
    const execution = new StepExecution(run, {
      workRoot: this.#options.workRoot,
      scriptsRoot: this.#options.scriptsRoot,
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
      acceptedUnixMs: Date.now(),
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
      if (Date.now() - this.#lastPruneMs >= (this.#options.pruneEveryMs ?? 3600 * 1000)) this.#prune();
    }
  }

  /**
   * Drops what is past retention: tombstones, their work folders and cached package versions no
   * task has used since (extracted and downloaded packages add up on a machine deployed to every
   * day). Files are removed in the background.
   */
  #prune(): void {
    this.#lastPruneMs = Date.now();
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
      mask: createMasker(sensitiveValues),
      lastSeq,
      appendedSeq: lastSeq,
      sentSeq: record.logsAcknowledgedSeq,
      lastNanos: 0n,
      pending: [],
      pendingBytes: 0,
      unsent: record.logsAcknowledgedSeq >= lastSeq ? [] : undefined,
      resultSent: false,
    };
    this.#tasks.set(record.taskId, task);
    return task;
  }

  #write(task: ActiveTask, stream: LogStream, text: string): void {
    const masked = task.mask(text);
    const nanos = unixNanosNow();
    task.lastNanos = nanos > task.lastNanos ? nanos : task.lastNanos + 1n;
    task.pending.push({ seq: ++task.lastSeq, stream, text: masked, unixNanos: task.lastNanos.toString() });
    task.pendingBytes += masked.length + 32;
    // The task's first line goes out at once: it is what a user watching the deployment waits for
    // (promote → first line); later lines are batched.
    if (task.pendingBytes >= this.#maxBatchBytes || task.appendedSeq === 0) this.#flush(task);
    else task.flushTimer ??= setTimeout(() => this.#flush(task), this.#flushIntervalMs);
  }

  #flush(task: ActiveTask): void {
    clearTimeout(task.flushTimer);
    task.flushTimer = undefined;
    if (task.pending.length > 0) {
      this.#options.journal.appendLogs(task.record.taskId, task.pending);
      task.appendedSeq = task.lastSeq;
      if (task.unsent) {
        task.unsent.push(...task.pending);
        if (task.unsent.length > UNSENT_MEMORY_LINES) task.unsent = undefined; // re-read from disk
      }
      task.pending = [];
      task.pendingBytes = 0;
    }
    this.#pump(task);
  }

  /** Sends persisted-but-unsent lines in ≤ maxBatchBytes batches, then the result if due. */
  #pump(task: ActiveTask): void {
    const { taskId } = task.record;
    while (task.sentSeq < task.appendedSeq) {
      const lines = task.unsent
        ? takeBatch(task.unsent, this.#maxBatchBytes)
        : this.#options.journal.readLogs(taskId, task.sentSeq, this.#maxBatchBytes);
      const last = lines.at(-1);
      if (!last) break;
      if (!this.#link.trySend({ logBatch: { taskId, lines: lines.map(toWireLine) } })) return;
      task.unsent?.splice(0, lines.length);
      task.sentSeq = last.seq;
    }
    task.unsent ??= task.sentSeq >= task.appendedSeq ? [] : undefined;
    const { record } = task;
    if (record.status === 'finished' && record.result && !record.resultAcknowledged && !task.resultSent) {
      task.resultSent = this.#link.trySend({ taskResult: toWireResult(taskId, record.result) });
    }
  }

  #finish(task: ActiveTask, outcome: TaskOutcome): void {
    this.#flush(task);
    const { record } = task;
    record.status = 'finished';
    record.finishedUnixMs = Date.now();
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

function takeBatch(lines: readonly StoredLogLine[], maxBytes: number): StoredLogLine[] {
  let bytes = 0;
  let count = 0;
  for (const line of lines) {
    if (count > 0 && bytes + line.text.length > maxBytes) break;
    bytes += line.text.length;
    count++;
  }
  return lines.slice(0, count);
}

const NANOS_ANCHOR = BigInt(Date.now()) * 1_000_000n - process.hrtime.bigint();

/** Wall-clock unix time in ns with hrtime resolution (monotonic within this process). */
function unixNanosNow(): bigint {
  return NANOS_ANCHOR + process.hrtime.bigint();
}
