/**
 * Calls collected for a short window and answered by one statement: what a fleet's steady
 * chatter (a heartbeat per agent every 15 s — ~670 a second from 10,000 agents) costs the database
 * then grows with the window count, not with the fleet. Only for work that may wait that long.
 */
export class TimedBatch<K, I, R> {
  readonly #windowMs: number;
  readonly #run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R> | void>;
  #items = new Map<K, I>();
  /** The open window's outcome, shared by all its callers (one promise a window, not one a call). */
  #window: {
    promise: Promise<ReadonlyMap<K, R> | void>;
    resolve: (answers: ReadonlyMap<K, R> | void) => void;
    reject: (error: unknown) => void;
  } | null = null;
  #timer: NodeJS.Timeout | null = null;

  /** `run` gets each key's latest item once per window; what it answers per key goes to that key's callers. */
  constructor(windowMs: number, run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R> | void>) {
    this.#windowMs = windowMs;
    this.#run = run;
  }

  async add(key: K, item: I): Promise<R | undefined> {
    const answers = await this.note(key, item);
    return answers ? answers.get(key) : undefined;
  }

  /**
   * add() for a caller that needs no answer: settles when the window ran, and is the window's own
   * promise (a fleet's heartbeats allocate nothing per call). The caller must handle its rejection.
   */
  note(key: K, item: I): Promise<ReadonlyMap<K, R> | void> {
    this.#items.set(key, item);
    this.#timer ??= setTimeout(() => void this.flush(), this.#windowMs);
    if (!this.#window) {
      let resolve!: (answers: ReadonlyMap<K, R> | void) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<ReadonlyMap<K, R> | void>((yes, no) => {
        resolve = yes;
        reject = no;
      });
      // Callers attach their own handlers; this one keeps a window nobody awaits from being "unhandled".
      promise.catch(() => undefined);
      this.#window = { promise, resolve, reject };
    }
    return this.#window.promise;
  }

  /** Runs what is collected now (on stop, so nothing waits for a timer that no longer matters). */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const items = this.#items;
    const window = this.#window;
    this.#items = new Map();
    this.#window = null;
    if (items.size === 0 || !window) return;
    try {
      window.resolve(await this.#run(items));
    } catch (error) {
      window.reject(error);
    }
  }
}
