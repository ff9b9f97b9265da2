/**
 * A Map that keeps at most `capacity` entries, dropping the oldest insertion first. For values
 * that never change once written (plans, releases, dispatched tasks): no expiry is needed, only
 * a bound on memory.
 */
export class BoundedCache<V> {
  readonly #entries = new Map<string, V>();
  readonly #capacity: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
    this.#capacity = capacity;
  }

  get(key: string): V | undefined {
    return this.#entries.get(key);
  }

  remember(key: string, value: V): void {
    this.#entries.delete(key);
    if (this.#entries.size >= this.#capacity) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, value);
  }

  /**
   * The cached value, or `load`'s, remembered when `keep` accepts it (by default: when it is not
   * null). Concurrent misses each load; the values are immutable, so the last one simply wins.
   */
  async getOrLoad(
    key: string,
    load: () => Promise<V | null>,
    keep: (value: V) => boolean = () => true,
  ): Promise<V | null> {
    const known = this.#entries.get(key);
    if (known !== undefined) return known;
    const value = await load();
    if (value !== null && keep(value)) this.remember(key, value);
    return value;
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
