import type { Migration } from 'kysely';
import * as foundation from './0001_foundation.ts';
import * as sessions from './0002_sessions.ts';
import * as webhooks from './0003_webhooks.ts';
import * as redaction from './0004_redaction.ts';
import * as spentNonces from './0005_spent_nonces.ts';
import * as redactionLookups from './0006_redaction_lookups.ts';
import * as issuerTrust from './0007_issuer_trust.ts';
import * as openid4vp from './0008_openid4vp.ts';
import * as claimIndex from './0009_claim_index.ts';
import * as healthProbe from './0010_health_probe.ts';
import * as claimByEndpoint from './0011_claim_by_endpoint.ts';
import * as universityLogin from './0012_university_login.ts';
import * as openid4vpHeldResults from './0013_openid4vp_held_results.ts';
import * as dashboard from './0014_dashboard.ts';
import * as credentialProfiles from './0015_credential_profiles.ts';
import * as scaleIndexes from './0016_scale_indexes.ts';
import * as identityFederations from './0019_identity_federations.ts';
import * as sessionCounts from './0021_session_counts.ts';
import * as sessionIndexDiet from './0022_session_index_diet.ts';

/**
 * A migration; one that exports `transactional = false` runs outside a transaction on PostgreSQL
 * (an index built CONCURRENTLY cannot run inside one: store/online-index.ts).
 */
export type MigrationModule = Migration & { transactional?: boolean };

/** Every migration, in order. Names are permanent: never rename or edit one that has shipped. */
export const MIGRATIONS: Record<string, MigrationModule> = {
  '0001_foundation': foundation,
  '0002_sessions': sessions,
  '0003_webhooks': webhooks,
  '0004_redaction': redaction,
  '0005_spent_nonces': spentNonces,
  '0006_redaction_lookups': redactionLookups,
  '0007_issuer_trust': issuerTrust,
  '0008_openid4vp': openid4vp,
  '0009_claim_index': claimIndex,
  '0010_health_probe': healthProbe,
  '0011_claim_by_endpoint': claimByEndpoint,
  '0012_university_login': universityLogin,
  '0013_openid4vp_held_results': openid4vpHeldResults,
  '0014_dashboard': dashboard,
  '0015_credential_profiles': credentialProfiles,
  '0016_scale_indexes': scaleIndexes,
  '0019_identity_federations': identityFederations,
  '0021_session_counts': sessionCounts,
  '0022_session_index_diet': sessionIndexDiet,
};
