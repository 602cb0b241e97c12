import { LRUCache } from 'lru-cache';

/**
 * A Map bounded by entry count that evicts the least recently used entry: the one eviction rule of
 * every in-process cache (prepared statements, parsed certificates, decoded status lists, derived
 * session secrets, request URIs, issuer publications, endpoints seen timing out). Reading with
 * {@link get} or writing with {@link set} makes an entry the most recent; {@link has} and
 * {@link keys} leave the order alone. Pure: no clock, no I/O, so every layer may hold one.
 *
 * Kept by lru-cache (a linked list over arrays): a JavaScript Map in insertion order evicting its
 * first key cost 5 µs a set once full, the iterator skipping every entry deleted since the table
 * was last compacted; lru-cache takes 0.25 µs. Values are boxed, since lru-cache cannot hold
 * undefined and a cache may (a certificate that does not parse).
 */
export class BoundedCache<K extends string, V> {
  readonly #entries: LRUCache<K, { value: V }>;

  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new RangeError(`a cache holds at least one entry, not ${limit}`);
    this.#entries = new LRUCache({ max: limit });
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The value of `key`, now the most recently used; undefined if absent. */
  get(key: K): V | undefined {
    return this.#entries.get(key)?.value;
  }

  /** Whether `key` is held, without touching its recency. */
  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** Keeps `value` as the most recently used; past the limit, the least recently used goes. */
  set(key: K, value: V): this {
    this.#entries.set(key, { value });
    return this;
  }

  delete(key: K): boolean {
    return this.#entries.delete(key);
  }

  /** The keys, least recently used first. */
  keys(): IterableIterator<K> {
    return this.#entries.rkeys();
  }
}
