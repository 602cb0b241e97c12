/**
 * A Map bounded by entry count that evicts the least recently used entry: the one eviction rule of
 * every in-process cache (prepared statements, parsed certificates, decoded status lists, derived
 * session secrets, request URIs, issuer publications, endpoints seen timing out). Reading with
 * {@link get} or writing with {@link set} makes an entry the most recent; {@link has} and
 * {@link keys} leave the order alone. Pure: no clock, no I/O, so every layer may hold one.
 */
export class BoundedCache<K, V> {
  readonly #entries = new Map<K, V>();

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new RangeError(`a cache holds at least one entry, not ${limit}`);
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value of `key`, now the most recently used; undefined if absent. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Whether `key` is held, without touching its recency. */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** Keeps `value` as the most recently used; past the limit, the least recently used goes. */
  set(key: K, value: V): this {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.limit) this.#entries.delete(this.#entries.keys().next().value as K);
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** The keys, least recently used first. */
  keys(): IterableIterator<K> {
    return this.#entries.keys();
  }
}
