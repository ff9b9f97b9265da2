/**
 * A bounded cache of values that may change elsewhere: each entry lives at most `maxAgeMs` from
 * the start of the read that produced it (the bound on how stale it can be when the change was
 * made where this process does not hear of it), and `forget`/`clear` drop entries at once when
 * this process learns of a change.
 *
 * A read that was under way when its key was forgotten (or the cache cleared) is not kept: it may
 * have read the state from before the change. With `shareLoads`, concurrent misses of one key wait
 * for one read (a storm of pollers costs one query, not fifty); a caller joins a read only until
 * its key is forgotten, so nobody is answered from before a change it could have seen. Only values `keep` accepts are kept (by default: not null), so a
 * refusal is never cached.
 *
 * Time is given by the caller (from its Clock) in milliseconds, so tests control expiry.
 */
interface Load<V> {
  promise: Promise<V | null>;
  /** Set by forget/clear while the read runs: its value must not be kept. */
  stale: boolean;
}

export class ExpiringCache<V> {
  readonly #entries = new Map<string, { value: V; expiresAt: number }>();
  /** The reads under way, by key (several at once only without shareLoads). */
  readonly #loading = new Map<string, Set<Load<V>>>();
  readonly #capacity: number;
  readonly #maxAgeMs: number;
  readonly #shareLoads: boolean;

  constructor(options: { capacity: number; maxAgeMs: number; shareLoads?: boolean }) {
    if (!Number.isInteger(options.capacity) || options.capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    if (!(options.maxAgeMs >= 0)) throw new RangeError('maxAgeMs must be zero or more');
    this.#capacity = options.capacity;
    this.#maxAgeMs = options.maxAgeMs;
    this.#shareLoads = options.shareLoads ?? false;
  }

  /** The cached value while it is younger than the max age, else undefined. */
  get(key: string, nowMs: number): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > nowMs) return entry.value;
    this.#entries.delete(key);
    return undefined;
  }

  /** The cached value, or `load`'s (kept when `keep` accepts it and its key was not forgotten meanwhile). */
  async getOrLoad(
    key: string,
    nowMs: number,
    load: () => Promise<V | null>,
    keep: (value: V) => boolean = () => true,
  ): Promise<V | null> {
    const known = this.get(key, nowMs);
    if (known !== undefined) return known;
    let loads = this.#loading.get(key);
    if (this.#shareLoads && loads) {
      for (const pending of loads) return pending.promise;
    }
    const current: Load<V> = { promise: load(), stale: false };
    if (!loads) this.#loading.set(key, (loads = new Set()));
    loads.add(current);
    try {
      const value = await current.promise;
      if (value !== null && !current.stale && keep(value)) this.#remember(key, value, nowMs);
      return value;
    } finally {
      loads.delete(current);
      if (loads.size === 0 && this.#loading.get(key) === loads) this.#loading.delete(key);
    }
  }

  forget(key: string): void {
    this.#entries.delete(key);
    for (const pending of this.#loading.get(key) ?? []) pending.stale = true;
    this.#loading.delete(key);
  }

  /** Forgets every key that starts with `prefix`. */
  forgetPrefix(prefix: string): void {
    for (const key of [...this.#entries.keys(), ...this.#loading.keys()]) if (key.startsWith(prefix)) this.forget(key);
  }

  clear(): void {
    for (const loads of this.#loading.values()) for (const pending of loads) pending.stale = true;
    this.#loading.clear();
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #remember(key: string, value: V, startedMs: number): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, expiresAt: startedMs + this.#maxAgeMs });
  }
}
