import type { Kysely } from 'kysely';
import { jsonTextField, keyTextType } from '../dialect.ts';

/**
 * Redaction and result retention: when a session was redacted, which events are about which
 * session (so that redaction finds them without parsing every event), and the indexes the
 * retention sweep walks.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('redacted_at', 'text').execute();
  // The retention sweep: sessions not yet redacted, by the end of their life.
  await db.schema.createIndex('sessions_retention').on('sessions').columns(['redacted_at', 'expires_at']).execute();

  await db.schema.alterTable('events').addColumn('session_id', keyTextType(db)).execute();
  await db
    .updateTable('events')
    .set({ session_id: jsonTextField(db, 'data', 'sessionId') })
    .execute();
  await db.schema.createIndex('events_session').on('events').column('session_id').execute();

  // Dropping attempts' response bodies past the retention window.
  await db.schema.createIndex('webhook_attempts_started').on('webhook_attempts').column('started_at').execute();
}
