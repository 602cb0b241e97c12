import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * Businesses serve themselves (issue 28, docs/dashboard.md): where a session sends the student back
 * (`sessions.return_url`, limited to `applications.allowed_return_origins`), the members of an
 * organization and how they sign in (password hash, passkeys, cookie sessions), their invitations,
 * the audit log, and the per-day verification funnel the dashboard reads instead of the sessions.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  await db.schema.alterTable('applications').addColumn('allowed_return_origins', 'text').execute();
  await db.schema.alterTable('sessions').addColumn('return_url', 'text').execute();

  await db.schema
    .createTable('members')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('org_id', key, (c) => c.notNull().references('organizations.id'))
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('role', 'text', (c) => c.notNull())
    // argon2id (PHC string); null for a member who signs in with passkeys only.
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('members_org').on('members').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('member_invitations')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('org_id', key, (c) => c.notNull().references('organizations.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    // SHA-256 of the token in the invitation link: the link itself is never stored.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'text')
    .execute();
  await db.schema.createIndex('member_invitations_org').on('member_invitations').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('member_passkeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('member_id', key, (c) => c.notNull().references('members.id').onDelete('cascade'))
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();
  await db.schema.createIndex('member_passkeys_member').on('member_passkeys').column('member_id').execute();

  await db.schema
    .createTable('dashboard_sessions')
    // SHA-256 of the cookie's token: a copy of the table signs nobody in.
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('member_id', key, (c) => c.notNull().references('members.id').onDelete('cascade'))
    .addColumn('environment', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('dashboard_sessions_expiry').on('dashboard_sessions').column('expires_at').execute();

  await db.schema
    .createTable('webauthn_challenges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('challenge', 'text', (c) => c.notNull())
    .addColumn('member_id', key)
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('org_id', key, (c) => c.notNull())
    // A member id, or `operator` (CLI, admin API).
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text')
    .addColumn('environment', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_org').on('audit_log').columns(['org_id', 'id']).execute();

  await db.schema
    .createTable('session_funnel_daily')
    .addColumn('app_id', key, (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('created', 'integer', (c) => c.notNull())
    .addColumn('consented', 'integer', (c) => c.notNull())
    .addColumn('verified', 'integer', (c) => c.notNull())
    .addColumn('not_verified', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('session_funnel_daily_pk', ['app_id', 'day'])
    .execute();
}
