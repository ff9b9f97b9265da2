/**
 * Writes what agents report for a deployment — log batches and task results — coalesced into one
 * statement at a time per deployment on this replica.
 *
 * Every such write locks the deployment's row (log ticks are allocated under it), so fifty agents
 * reporting at once would queue fifty commits on that one lock, each holding a pooled connection
 * while it waits, and a client reading the deployment would wait for a connection behind them.
 * Here the first report goes out at once; reports that arrive while it is in flight ride in the
 * next statement together. Each caller still learns when its own lines are stored.
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
  write(deploymentId: string, entries: readonly NewLogEntry[], finishes: readonly TaskFinish[] = []): Promise<Set<string>> {
    return new Promise((resolve, reject) => {
      const queue = this.#queues.get(deploymentId);
      const report = { entries, finishes, resolve, reject };
      if (queue) {
        queue.push(report);
        return;
      }
      this.#queues.set(deploymentId, [report]);
      void this.#drain(deploymentId);
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
        else for (const report of batch) await this.#writeTogether(deploymentId, [report]).catch((error: unknown) => report.reject(error));
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
    const { finished } = await this.#store.deploymentLogs.record(
      deploymentId,
      batch.flatMap((r) => r.entries),
      batch.flatMap((r) => r.finishes),
      this.#clock.now(),
    );
    for (const report of batch) report.resolve(new Set(report.finishes.map((f) => f.taskId).filter((id) => finished.has(id))));
  }
}
