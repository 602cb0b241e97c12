import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anotherSchemaVanished } from '../../src/store/db.ts';

/**
 * Migrating is retried only when Kysely's read of every schema's tables met another program's
 * schema as it was dropped (seen with test files sharing one PostgreSQL database): never for our
 * own schema, never for any other error.
 */
test('a schema dropped by another program is retried; our own schema, or any other error, is not', () => {
  const vanished = (name: string) => new Error(`schema "${name}" does not exist`);
  assert.equal(anotherSchemaVanished(vanished('t_other'), 't_mine'), true);
  assert.equal(anotherSchemaVanished(vanished('t_mine'), 't_mine'), false);
  assert.equal(anotherSchemaVanished(vanished('public'), undefined), false);
  assert.equal(anotherSchemaVanished(vanished('t_other'), undefined), true);
  assert.equal(anotherSchemaVanished(new Error('relation "sessions" does not exist'), 't_mine'), false);
  assert.equal(anotherSchemaVanished('not an error', 't_mine'), false);
});
