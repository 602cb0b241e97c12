import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BoundedCache } from '../../src/domain/bounded-cache.ts';

test('holds at most its limit, the least recently set evicted first', () => {
  const cache = new BoundedCache<string, number>(3);
  for (const [i, key] of ['a', 'b', 'c', 'd', 'e'].entries()) {
    cache.set(key, i);
    assert.ok(cache.size <= 3);
  }
  assert.deepEqual([...cache.keys()], ['c', 'd', 'e']);
  assert.deepEqual(
    ['a', 'b', 'c', 'd', 'e'].map((key) => cache.get(key)),
    [undefined, undefined, 2, 3, 4],
  );
});

test('get makes an entry the most recent; has and keys leave the order alone', () => {
  const cache = new BoundedCache<string, number>(2);
  cache.set('a', 1).set('b', 2);
  assert.equal(cache.has('a'), true);
  assert.deepEqual([...cache.keys()], ['a', 'b']);
  cache.set('c', 3);
  assert.deepEqual([...cache.keys()], ['b', 'c'], 'has did not save a');

  assert.equal(cache.get('b'), 2);
  cache.set('d', 4);
  assert.deepEqual([...cache.keys()], ['b', 'd'], 'get saved b, c went');
  assert.deepEqual([cache.size, cache.get('c'), cache.get('b'), cache.get('d')], [2, undefined, 2, 4]);
});

test('set of a held key replaces its value and makes it the most recent', () => {
  const cache = new BoundedCache<string, number>(2);
  cache.set('a', 1).set('b', 2).set('a', 10).set('c', 3);
  assert.deepEqual([...cache.keys()], ['a', 'c']);
  assert.equal(cache.get('a'), 10);
});

test('a stored undefined is held and refreshed like any value', () => {
  const cache = new BoundedCache<string, number | undefined>(2);
  cache.set('none', undefined).set('b', 2);
  assert.equal(cache.has('none'), true);
  assert.equal(cache.get('none'), undefined);
  cache.set('c', 3);
  assert.deepEqual([...cache.keys()], ['none', 'c']);
});

test('delete forgets an entry; a limit below one is refused', () => {
  const cache = new BoundedCache<string, number>(1);
  cache.set('a', 1);
  assert.equal(cache.delete('a'), true);
  assert.equal(cache.delete('a'), false);
  assert.equal(cache.size, 0);
  for (const limit of [0, -1, 1.5, Number.NaN]) assert.throws(() => new BoundedCache(limit), RangeError);
});
