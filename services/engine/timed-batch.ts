/**
 * Calls collected for a short window and answered by one statement: what a fleet's steady
 * chatter (a heartbeat per agent every 15 s — ~670 a second from 10,000 agents) costs the database
 * then grows with the window count, not with the fleet. Only for work that may wait that long.
 */
export class TimedBatch<K, I, R> {
  readonly #windowMs: number;
  readonly #run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R> | void>;
  #items = new Map<K, I>();
  #waiters: Array<{ resolve: (answers: ReadonlyMap<K, R> | void) => void; reject: (error: unknown) => void }> = [];
  #timer: NodeJS.Timeout | null = null;

  /** `run` gets each key's latest item once per window; what it answers per key goes to that key's callers. */
  constructor(windowMs: number, run: (items: ReadonlyMap<K, I>) => Promise<ReadonlyMap<K, R> | void>) {
    this.#windowMs = windowMs;
    this.#run = run;
  }

  async add(key: K, item: I): Promise<R | undefined> {
    this.#items.set(key, item);
    this.#timer ??= setTimeout(() => void this.flush(), this.#windowMs);
    const answers = await new Promise<ReadonlyMap<K, R> | void>((resolve, reject) =>
      this.#waiters.push({ resolve, reject }),
    );
    return answers ? answers.get(key) : undefined;
  }

  /** Runs what is collected now (on stop, so nothing waits for a timer that no longer matters). */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const items = this.#items;
    const waiters = this.#waiters;
    this.#items = new Map();
    this.#waiters = [];
    if (items.size === 0) return;
    try {
      const answers = await this.#run(items);
      for (const waiter of waiters) waiter.resolve(answers);
    } catch (error) {
      for (const waiter of waiters) waiter.reject(error);
    }
  }
}
