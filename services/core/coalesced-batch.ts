/**
 * Calls answered together by one statement when they come together, and at once when they come
 * alone: a call made while no batch is running and none started in the last `gapMs` runs on the
 * next turn of the event loop (with whatever else arrived in that turn); calls made meanwhile wait
 * for the running batch to end and the gap to pass, and are then answered by one more.
 *
 * For what an agent's connect costs: 10,000 agents reconnecting after a replica restart were three
 * statements each (the credential, the Hello, the task sync) — and each statement costs the server
 * a wake-up of PostgreSQL on top of PostgreSQL's own time. A lone agent's connect waits for nothing
 * (unlike TimedBatch, whose window every call waits out).
 */
import { performance } from 'node:perf_hooks';

interface Deferred<R> {
  promise: Promise<R>;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

function deferred<R>(): Deferred<R> {
  let resolve!: (value: R) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<R>((yes, no) => {
    resolve = yes;
    reject = no;
  });
  // Callers attach their own handlers; this one keeps a batch nobody awaits from being "unhandled".
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

export class CoalescedBatch<K, I, R> {
  readonly #gapMs: number;
  readonly #run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R>>;
  /** Keyed: of two calls for one key in a batch, the later item is what runs; both get its answer. */
  #items = new Map<K, I>();
  #next: Deferred<ReadonlyMap<K, R>> | null = null;
  #running = false;
  #scheduled = false;
  #lastStartMs = Number.NEGATIVE_INFINITY;

  constructor(gapMs: number, run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R>>) {
    this.#gapMs = gapMs;
    this.#run = run;
  }

  /** The answer `run` gave for `key` in the batch this call joined (undefined when it gave none). */
  async get(key: K, item: I): Promise<R | undefined> {
    this.#items.set(key, item);
    this.#next ??= deferred();
    const answers = this.#next.promise;
    this.#schedule();
    return (await answers).get(key);
  }

  #schedule(): void {
    if (this.#running || this.#scheduled || this.#items.size === 0) return;
    this.#scheduled = true;
    const waitMs = this.#lastStartMs + this.#gapMs - performance.now();
    if (waitMs > 0) setTimeout(() => void this.#start(), waitMs);
    else setImmediate(() => void this.#start());
  }

  async #start(): Promise<void> {
    this.#scheduled = false;
    const items = this.#items;
    const answers = this.#next!;
    this.#items = new Map();
    this.#next = null;
    this.#running = true;
    this.#lastStartMs = performance.now();
    try {
      answers.resolve(await this.#run(items));
    } catch (error) {
      answers.reject(error);
    } finally {
      this.#running = false;
      this.#schedule();
    }
  }
}
