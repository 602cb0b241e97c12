import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * OpenID4VP same-device answers waiting for their redirect. HAIP: a presentation whose redirect
 * back is not followed in the browser that started the flow must not complete the session. The
 * judged result (the outcome only, never the presentation) waits here until the wallet's redirect
 * with the right response_code reaches that browser; completion, expiry and redaction delete it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('openid4vp_held_results')
    .addColumn('session_id', keyTextType(db), (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('held_at', 'text', (c) => c.notNull())
    .execute();
}
