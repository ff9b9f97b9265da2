/**
 * Writes what agents report for a deployment — log batches and task results — coalesced into one
 * statement at a time per deployment on this replica.
 *
 * Every such write locks the deployment's row (log ticks are allocated under it), so fifty agents
 * reporting at once would queue fifty commits on that one lock, each holding a pooled connection
 * while it waits, and a client reading the deployment would wait for a connection behind them.
 * Here the reports taken in one turn of the event loop go out together, and reports that arrive
 * while a statement is in flight ride in the next one. Each caller still learns when its own
 * lines are stored; a deployment's reports are written in the order they were taken.
 */
import type { Clock } from '../core/index.ts';
import type { NewLogEntry, Store, TaskFinish } from '../store/index.ts';

interface Report {
  entries: readonly NewLogEntry[];
  finishes: readonly TaskFinish[];
  resolve(finished: Set<string>): void;
  reject(error: unknown): void;
}

export interface ProgressWriterOptions {
  store: Store;
  clock: Clock;
  /** A statement carries at most about this many lines (one report is never split). */
  maxLinesPerWrite?: number;
}

export class ProgressWriter {
  readonly #store: Store;
  readonly #clock: Clock;
  readonly #maxLines: number;
  /** Reports waiting per deployment; a key exists while that deployment is being written. */
  readonly #queues = new Map<string, Report[]>();

  constructor(options: ProgressWriterOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#maxLines = options.maxLinesPerWrite ?? 5_000;
  }

  /**
   * Stores the lines and task ends once they are committed. Resolves with the tasks that moved
   * from Running to their final status in this write (a task already final is left alone).
   */
  write(
    deploymentId: string,
    entries: readonly NewLogEntry[],
    finishes: readonly TaskFinish[] = [],
  ): Promise<Set<string>> {
    return new Promise((resolve, reject) => {
      const queue = this.#queues.get(deploymentId);
      const report = { entries, finishes, resolve, reject };
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

  #take(queue: Report[]): Report[] {
    let lines = 0;
    let count = 0;
    for (const report of queue) {
      const size = report.entries.length + report.finishes.length;
      if (count > 0 && lines + size > this.#maxLines) break;
      lines += size;
      count++;
    }
    return queue.splice(0, count);
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
    const { finished } = await this.#store.deploymentLogs.record(
      deploymentId,
      batch.flatMap((r) => r.entries),
      owned.flat(),
      this.#clock.now(),
    );
    batch.forEach((report, i) =>
      report.resolve(new Set(owned[i]!.map((f) => f.taskId).filter((id) => finished.has(id)))),
    );
  }
}
