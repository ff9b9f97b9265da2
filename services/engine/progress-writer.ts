/**
 * Writes what agents report for a deployment — chunks of log lines, task results, the engine's
 * own entries — coalesced into one statement at a time per deployment on this replica.
 *
 * Every such write locks the deployment's row (log ticks are allocated under it), so fifty agents
 * reporting at once would queue fifty commits on that one lock, each holding a pooled connection
 * while it waits, and a client reading the deployment would wait for a connection behind them.
 * Here the reports taken in one turn of the event loop go out together, and reports that arrive
 * while a statement is in flight ride in the next one. Each caller still learns when its own
 * report is stored; a deployment's reports are written in the order they were taken.
 */
import type { Clock } from '../core/index.ts';
import type { NewLogChunk, NewLogEntry, RecordClaim, RecordResult, Store, TaskFinish } from '../store/index.ts';

/** What became of one report. */
export interface ReportOutcome {
  /** Its tasks that moved from Running to their final status (a task already final is left alone). */
  finished: Set<string>;
  /** Its chunks that were stored, by task. */
  storedChunks: Set<string>;
  /** Its chunks that were not, with their task's last stored seq (see RecordResult). */
  refusedChunks: Map<string, { lastLogSeq: number; running: boolean }>;
  /** The lease its statement took for the report's claim; null when it asked for none or did not get it. */
  claimed: RecordResult['claimed'];
  /**
   * With `claimed`: every task end its statement recorded, the other reports' too (the same
   * deployment's), so the advance that lease starts knows all the slots they freed. Empty otherwise.
   */
  endedWithClaim: readonly TaskFinish[];
}

interface Report {
  entries: readonly NewLogEntry[];
  finishes: readonly TaskFinish[];
  chunks: readonly NewLogChunk[];
  claim: RecordClaim | undefined;
  resolve(outcome: ReportOutcome): void;
  reject(error: unknown): void;
}

export interface ProgressWriterOptions {
  store: Store;
  clock: Clock;
  /** A statement carries at most about this many lines (one report is never split). */
  maxLinesPerWrite?: number;
  /** …and about this many bytes of chunk text. */
  maxBytesPerWrite?: number;
  /** Called after each statement that stored something for the deployment (live followers wake). */
  onWritten?: (deploymentId: string) => void;
}

export class ProgressWriter {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #maxLines: number;
  readonly #maxBytes: number;
  readonly #onWritten: (deploymentId: string) => void;
  /** Reports waiting per deployment; a key exists while that deployment is being written. */
  readonly #queues = new Map<string, Report[]>();

  constructor(options: ProgressWriterOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#maxLines = options.maxLinesPerWrite ?? 50_000;
    this.#maxBytes = options.maxBytesPerWrite ?? 4 * 1024 * 1024;
    this.#onWritten = options.onWritten ?? (() => undefined);
  }

  /**
   * Stores the entries, chunks and task ends once they are committed; resolves with what became of
   * them. `claim`: the statement also takes the deployment's lease (RecordClaim); one caller at a
   * time asks for it (the engine, advancing nothing else of the deployment).
   */
  write(
    deploymentId: string,
    entries: readonly NewLogEntry[],
    finishes: readonly TaskFinish[] = [],
    chunks: readonly NewLogChunk[] = [],
    claim?: RecordClaim,
  ): Promise<ReportOutcome> {
    return new Promise((resolve, reject) => {
      const queue = this.#queues.get(deploymentId);
      const report = { entries, finishes, chunks, claim, resolve, reject };
      if (queue) {
        queue.push(report);
        return;
      }
      this.#queues.set(deploymentId, [report]);
      // Once this turn of the event loop is over: reports of agents read in the same turn (a
      // wide deployment's burst) go out in this statement rather than queue behind it.
      setImmediate(() => void this.#drain(deploymentId));
    });
  }

  async #drain(deploymentId: string): Promise<void> {
    const queue = this.#queues.get(deploymentId)!;
    while (queue.length > 0) {
      const batch = this.#take(queue);
      try {
        await this.#writeTogether(deploymentId, batch);
      } catch (error) {
        if (batch.length === 1) batch[0]!.reject(error);
        // One report the database refuses must not fail the others that shared its statement.
        else
          for (const report of batch)
            await this.#writeTogether(deploymentId, [report]).catch((error: unknown) => report.reject(error));
      }
    }
    this.#queues.delete(deploymentId);
  }

  /**
   * The reports that go out together, within the size budget: each task's reports in the order
   * they were taken, and none that would touch a task's row twice — one chunk per task, and a
   * task's end never beside its chunk (its end must see those lines stored). A report that must
   * wait holds back its tasks' later reports only; one with entries of no task (the engine's
   * own) keeps its place among all. One report is never split.
   */
  #take(queue: Report[]): Report[] {
    let lines = 0;
    let bytes = 0;
    const taken: Report[] = [];
    const chunked = new Set<string>();
    const ended = new Set<string>();
    const waiting = new Set<string>();
    let barrier = false;
    for (const report of queue) {
      const tasks = tasksOf(report);
      const global = report.entries.some((entry) => !entry.taskId);
      const size = report.entries.length + report.finishes.length + report.chunks.reduce((n, c) => n + c.lineCount, 0);
      const text = report.chunks.reduce((n, c) => n + c.data.length, 0);
      const clash =
        barrier ||
        (global && waiting.size > 0) ||
        [...tasks].some((id) => waiting.has(id)) ||
        report.chunks.some((c) => chunked.has(c.taskId) || ended.has(c.taskId)) ||
        report.finishes.some((f) => chunked.has(f.taskId));
      if (taken.length > 0 && (lines + size > this.#maxLines || bytes + text > this.#maxBytes)) break;
      if (clash && taken.length > 0) {
        for (const id of tasks) waiting.add(id);
        barrier ||= global;
        continue;
      }
      taken.push(report);
      lines += size;
      bytes += text;
      for (const chunk of report.chunks) chunked.add(chunk.taskId);
      for (const finish of report.finishes) ended.add(finish.taskId);
    }
    const chosen = new Set(taken);
    const rest = queue.filter((report) => !chosen.has(report));
    queue.splice(0, queue.length, ...rest);
    return taken;
  }

  async #writeTogether(deploymentId: string, batch: Report[]): Promise<void> {
    // A task ends once: when two reports in one statement end the same task (an agent re-sent
    // its result), the first taken counts, as if written first; otherwise both would be told the
    // task moved, and both end lines would be stored.
    const ending = new Set<string>();
    const owned = batch.map((report) =>
      report.finishes.filter((finish) => {
        if (ending.has(finish.taskId)) return false;
        ending.add(finish.taskId);
        return true;
      }),
    );
    const claiming = batch.find((report) => report.claim);
    const result = await this.#store.deploymentLogs.record(
      deploymentId,
      batch.map((report, i) => ({ entries: report.entries, chunks: report.chunks, finishes: owned[i]! })),
      this.#clock.now(),
      { claim: claiming?.claim },
    );
    if (result.stored.length > 0 || result.storedChunks.size > 0) this.#onWritten(deploymentId);
    const ended = result.claimed ? owned.flat().filter((finish) => result.finished.has(finish.taskId)) : [];
    batch.forEach((report, i) => {
      const taskIds = new Set(report.chunks.map((c) => c.taskId));
      report.resolve({
        finished: new Set(owned[i]!.map((f) => f.taskId).filter((id) => result.finished.has(id))),
        storedChunks: new Set([...taskIds].filter((id) => result.storedChunks.has(id))),
        refusedChunks: new Map([...result.refusedChunks].filter(([id]) => taskIds.has(id))),
        claimed: report === claiming ? result.claimed : null,
        endedWithClaim: report === claiming ? ended : [],
      });
    });
  }
}

/** The tasks a report touches (its chunks, ends and task entries). */
function tasksOf(report: Report): Set<string> {
  const tasks = new Set<string>();
  for (const chunk of report.chunks) tasks.add(chunk.taskId);
  for (const finish of report.finishes) tasks.add(finish.taskId);
  for (const entry of report.entries) if (entry.taskId) tasks.add(entry.taskId);
  return tasks;
}
