import type { Kysely } from 'kysely';
import { keyTextType } from '../dialect.ts';

/**
 * University login (SAML 2.0 and OpenID Connect, docs/university-login.md): the identity providers
 * trusted per environment, the outstanding login requests (one per session and browser), the
 * assertion ids already accepted (a replay is refused), the service provider's generated sandbox
 * key pair (in the database for the reason 0008_openid4vp gives), and which answer channels an
 * application or a session accepts when it restricts them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const key = keyTextType(db);
  await db.schema
    .createTable('identity_providers')
    .addColumn('id', key, (c) => c.primaryKey())
    .addColumn('environment', key, (c) => c.notNull())
    .addColumn('protocol', 'text', (c) => c.notNull())
    // The SAML entityID, or the OpenID Connect issuer identifier.
    .addColumn('entity_id', key, (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('domain', 'text', (c) => c.notNull())
    .addColumn('country', 'text', (c) => c.notNull())
    // JSON array of the scopes (shibmd:Scope, or the domains an OIDC provider vouches for).
    .addColumn('scopes', 'text', (c) => c.notNull())
    // SAML: the SingleSignOnService (HTTP-Redirect) and the signing certificates (JSON array of PEM).
    .addColumn('sso_url', 'text')
    .addColumn('certificates', 'text')
    // OIDC: client id, the client secret sealed (AES-256-GCM, IDP_SECRETS_KEY), the affiliation claim.
    .addColumn('client_id', 'text')
    .addColumn('client_secret_sealed', 'text')
    .addColumn('affiliation_claim', 'text')
    // The federation aggregate it came from; null when added alone.
    .addColumn('federation', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('identity_providers_entity', ['environment', 'entity_id'])
    .execute();

  await db.schema
    .createTable('sso_requests')
    .addColumn('request_id', key, (c) => c.primaryKey())
    .addColumn('session_id', key, (c) => c.notNull())
    // SHA-256 of the browser's binding cookie: the response must come back to the browser that asked.
    .addColumn('browser_hash', key, (c) => c.notNull())
    .addColumn('idp_id', key, (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('sso_requests_session_browser', ['session_id', 'browser_hash'])
    .execute();
  await db.schema.createIndex('sso_requests_expiry').on('sso_requests').column('expires_at').execute();

  await db.schema
    .createTable('sso_spent_assertions')
    .addColumn('issuer', key, (c) => c.notNull())
    .addColumn('assertion_id', key, (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_spent_assertions_pk', ['issuer', 'assertion_id'])
    .execute();
  await db.schema.createIndex('sso_spent_assertions_expiry').on('sso_spent_assertions').column('expires_at').execute();

  await db.schema
    .createTable('saml_keys')
    .addColumn('name', key, (c) => c.primaryKey())
    .addColumn('private_key_pem', 'text', (c) => c.notNull())
    .addColumn('certificate_pem', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  // An application's or a session's accepted channels (JSON array); no row means every channel.
  await db.schema
    .createTable('answer_methods')
    .addColumn('owner_id', key, (c) => c.primaryKey())
    .addColumn('methods', 'text', (c) => c.notNull())
    .execute();
}
