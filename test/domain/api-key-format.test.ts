import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checksumOf, generateSecret, hashSecret, hintOf, parseSecret } from '../../src/domain/api-key-format.ts';

test('secrets have the prefix, 32 random base62 characters and a 6-character CRC32 checksum', () => {
  const test_ = generateSecret('sandbox');
  const live = generateSecret('live');
  assert.match(test_, /^sk_test_[0-9A-Za-z]{38}$/);
  assert.match(live, /^sk_live_[0-9A-Za-z]{38}$/);
  assert.equal(test_.slice(-6), checksumOf(test_.slice(0, -6)));
  assert.equal(parseSecret(test_), 'sandbox');
  assert.equal(parseSecret(live), 'live');
});

test('a changed character, a swapped prefix or a wrong length fails the checksum', () => {
  const secret = generateSecret('sandbox');
  const i = 12;
  const changed = secret.slice(0, i) + (secret[i] === 'a' ? 'b' : 'a') + secret.slice(i + 1);
  assert.equal(parseSecret(changed), undefined);
  assert.equal(parseSecret(secret.replace('sk_test_', 'sk_live_')), undefined);
  assert.equal(parseSecret(secret.slice(0, -1)), undefined);
  assert.equal(parseSecret(''), undefined);
  assert.equal(parseSecret('sk_test_' + '!'.repeat(38)), undefined);
});

test('the hint is the prefix, one asterisk per hidden character and the last four, as long as the key', () => {
  const secret = generateSecret('live');
  const hint = hintOf(secret);
  assert.equal(hint.length, secret.length);
  assert.equal(hint, `sk_live_${'*'.repeat(secret.length - 12)}${secret.slice(-4)}`);
});

test('secrets are random and stored only as a SHA-256 hex digest', () => {
  const a = generateSecret('sandbox');
  const b = generateSecret('sandbox');
  assert.notEqual(a, b);
  assert.match(hashSecret(a), /^[0-9a-f]{64}$/);
  assert.notEqual(hashSecret(a), hashSecret(b));
  // Stored hashes must stay what every earlier version stored: SHA-256 of the secret's UTF-8 bytes,
  // in hex (Python's hashlib.sha256 of the same key).
  assert.equal(
    hashSecret('sk_test_0123456789ABCDEFGHIJKLMNOPQRSTUVabcdef'),
    '2c033633eaac755ea544e731b4eae66deef169d5db5f4cb26b9b1e882f8df75d',
  );
});
