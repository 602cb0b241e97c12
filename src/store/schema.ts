import type { Generated } from 'kysely';
import type { DeliveryStatus } from '../domain/delivery-state.ts';
import type { Environment } from '../domain/environment.ts';
import type { IdpProtocol } from '../domain/identity-providers.ts';
import type { SessionStatus } from '../domain/session-state.ts';

/**
 * Row types of every table. Timestamps are ISO 8601 UTC text with milliseconds (they sort as
 * text and read the same on both dialects); booleans are 0/1 integers; JSON is text.
 */
export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ApplicationsTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  environment: Environment;
  status: 'active' | 'archived';
  created_at: string;
  updated_at: string;
  /** JSON array of origins the portal may send students back to and be framed by; null: none. */
  allowed_return_origins: Generated<string | null>;
}

export interface ApiKeysTable {
  id: string;
  app_id: string;
  org_id: string;
  name: string;
  environment: Environment;
  /** SHA-256 of the full secret, hex. The secret itself is never stored. */
  key_hash: string;
  key_hint: string;
  created_at: string;
}

export interface RevokedKeysTable {
  key_hash: string;
  key_id: string;
  app_id: string;
  org_id: string;
  revoked_at: string;
}

export interface IdempotencyKeysTable {
  scope: string;
  idempotency_key: string;
  fingerprint: string;
  status_code: number | null;
  response_body: string | null;
  created_at: string;
}

/** A nonce spent by direct verify (`/verification/v1/verify`); see migration 0005. */
export interface SpentNoncesTable {
  org_id: string;
  /** SHA-256 (hex) of the nonce: the caller's value itself is not kept. */
  nonce_hash: string;
  spent_at: string;
  /** After this the row is purged; the presentations it guarded are stale by then. */
  expires_at: string;
}

export interface IssuersTable {
  id: string;
  name: string;
  domain: string;
  country: string;
  environment: Environment;
  /** JSON of IssuerKeys (public keys only). */
  keys: string;
  /** JSON array of PEM trust anchors, or null. */
  anchors: string | null;
  /** SD-JWT VC issuer identifier whose metadata publishes the keys, or null. */
  metadata_issuer: string | null;
  created_at: string;
}

/** A status an operator set on one index of a sandbox university's status list. */
export interface SandboxCredentialStatusesTable {
  domain: string;
  idx: number;
  /** Token Status List value: 0 valid, 1 revoked (invalid), 2 suspended. */
  status: number;
  updated_at: string;
}

export interface SessionsTable {
  id: string;
  app_id: string;
  org_id: string;
  environment: Environment;
  status: SessionStatus;
  challenge_nonce: string;
  purpose: string;
  /** JSON array of claim names. */
  required_claims: string;
  /** JSON string map, or null. */
  metadata: string | null;
  client_reference: string | null;
  failed_attempts: Generated<number>;
  /** 1 verified, 0 not, null while open: the outcome, queryable without parsing `result`. */
  verified: number | null;
  /** JSON of the verified outcome once completed; raw presentations are never stored. */
  result: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  consented_at: string | null;
  completed_at: string | null;
  /** When the session's data was erased (redaction or retention); null while it is kept. */
  redacted_at: string | null;
  /** Where the portal sends the student once the session ends; erased by redaction. */
  return_url: Generated<string | null>;
}

/** The outbox: every event, written in the transaction of the state change that caused it. */
export interface EventsTable {
  id: string;
  app_id: string;
  org_id: string;
  environment: Environment;
  type: string;
  /** JSON of the event's `data`. */
  data: string;
  /** The session the event is about (its `data.sessionId`), so that redaction finds its events. */
  session_id: string | null;
  created_at: string;
}

/** A webhook endpoint. The signing secrets are kept in clear: signing needs them (HMAC). */
export interface WebhookEndpointsTable {
  id: string;
  app_id: string;
  org_id: string;
  environment: Environment;
  url: string;
  description: string | null;
  /** JSON array of event names. */
  events: string;
  enabled: number;
  disabled_reason: 'manual' | 'endpoint_gone' | null;
  secret: string;
  /** The secret before the last rotation, valid until previous_secret_expires_at. */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One event to one endpoint: the unit a worker claims, sends and retries. */
export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  /** When a worker should next take it: the next attempt while pending, the lease end while sending; null once final. */
  due_at: string | null;
  /** The claim holding the lease while sending: only that claim may record the outcome. */
  lease_token: string | null;
  /** Attempts started so far (a claim starts one). */
  attempt_count: number;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

/** The log of one HTTP attempt. */
export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt: number;
  worker_id: string;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  /** `succeeded`, or the sender's failure (timeout, http_error, …). */
  outcome: string;
  error_message: string | null;
  /** The start of the answer, at most 2 KiB. */
  response_body: string;
  response_body_truncated: number;
}

/** A request-signing key the service generated (the sandbox certificate), per public host. */
export interface Openid4vpSigningKeysTable {
  host: string;
  private_key_pem: string;
  certificate_pem: string;
  created_at: string;
}

/** A judged same-device OpenID4VP answer waiting for its redirect (migration 0013). */
export interface Openid4vpHeldResultsTable {
  session_id: string;
  /** The SessionResult, JSON. */
  result: string;
  held_at: string;
}

/** One row, rewritten by the readiness probe (migration 0010). */
export interface HealthProbeTable {
  id: number;
  checked_at: string;
}

/** Credential profiles added through the admin API or the CLI (migration 0015); the definition is JSON. */
export interface CredentialProfilesTable {
  id: string;
  definition: string;
  created_at: string;
}

/** A member of an organization: who may sign in to the dashboard (migration 0014). */
export interface MembersTable {
  id: string;
  org_id: string;
  email: string;
  role: string;
  password_hash: string | null;
  created_at: string;
  updated_at: string;
}

export interface MemberInvitationsTable {
  id: string;
  org_id: string;
  email: string;
  role: string;
  token_hash: string;
  invited_by: string;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
}

export interface MemberPasskeysTable {
  /** The credential id, base64url. */
  id: string;
  member_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  counter: number | string;
  /** JSON array of transports, or null. */
  transports: string | null;
  created_at: string;
  last_used_at: string | null;
}

export interface DashboardSessionsTable {
  token_hash: string;
  member_id: string;
  environment: Environment;
  created_at: string;
  expires_at: string;
}

export interface WebauthnChallengesTable {
  id: string;
  challenge: string;
  member_id: string | null;
  expires_at: string;
}

export interface AuditLogTable {
  id: string;
  org_id: string;
  actor: string;
  action: string;
  target: string | null;
  environment: string | null;
  created_at: string;
}

/** Sessions created on one UTC day of one application and how far they got; closed days only. */
export interface SessionFunnelDailyTable {
  app_id: string;
  day: string;
  created: number;
  consented: number;
  verified: number;
  not_verified: number;
}

/**
 * An application's sessions by stored status and outcome, kept by triggers on `sessions`
 * (migration 0021); one row per application and last character of the session id.
 */
export interface SessionCountsTable {
  app_id: string;
  shard: string;
  pending: number;
  consented: number;
  verified: number;
  not_verified: number;
  expired: number;
  cancelled: number;
  declined: number;
}

/** A trusted identity provider of university login (migration 0012). */
export interface IdentityProvidersTable {
  id: string;
  environment: Environment;
  protocol: IdpProtocol;
  entity_id: string;
  name: string;
  domain: string;
  country: string;
  /** JSON array of scopes. */
  scopes: string;
  sso_url: string | null;
  /** JSON array of PEM certificates. */
  certificates: string | null;
  client_id: string | null;
  /** AES-256-GCM under IDP_SECRETS_KEY (services/sso/secret-box.ts); never the secret itself. */
  client_secret_sealed: string | null;
  affiliation_claim: string | null;
  federation: string | null;
  created_at: string;
}

/** A federation's signed metadata aggregate (migration 0019); its IdPs are identity_providers rows. */
export interface IdentityFederationsTable {
  id: string;
  environment: Environment;
  name: string;
  /** Null when loaded from a file (no scheduled refresh). */
  metadata_url: string | null;
  default_country: string | null;
  /** PEM: the aggregate's signature must verify under it. */
  signing_certificate: string;
  valid_until: string | null;
  cache_duration_seconds: number | null;
  entity_count: number;
  refreshed_at: string | null;
  next_refresh_at: string | null;
  last_error: string | null;
  created_at: string;
}

export interface SsoRequestsTable {
  request_id: string;
  session_id: string;
  browser_hash: string;
  idp_id: string;
  created_at: string;
  expires_at: string;
}

export interface SsoSpentAssertionsTable {
  issuer: string;
  assertion_id: string;
  expires_at: string;
}

export interface SamlKeysTable {
  name: string;
  private_key_pem: string;
  certificate_pem: string;
  created_at: string;
}

export interface AnswerMethodsTable {
  owner_id: string;
  /** JSON array of AnswerMethod. */
  methods: string;
}

export interface Database {
  issuers: IssuersTable;
  credential_profiles: CredentialProfilesTable;
  sandbox_credential_statuses: SandboxCredentialStatusesTable;
  sessions: SessionsTable;
  events: EventsTable;
  organizations: OrganizationsTable;
  applications: ApplicationsTable;
  api_keys: ApiKeysTable;
  revoked_keys: RevokedKeysTable;
  idempotency_keys: IdempotencyKeysTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  spent_nonces: SpentNoncesTable;
  openid4vp_signing_keys: Openid4vpSigningKeysTable;
  openid4vp_held_results: Openid4vpHeldResultsTable;
  health_probe: HealthProbeTable;
  members: MembersTable;
  member_invitations: MemberInvitationsTable;
  member_passkeys: MemberPasskeysTable;
  dashboard_sessions: DashboardSessionsTable;
  webauthn_challenges: WebauthnChallengesTable;
  audit_log: AuditLogTable;
  session_funnel_daily: SessionFunnelDailyTable;
  session_counts: SessionCountsTable;
  identity_providers: IdentityProvidersTable;
  identity_federations: IdentityFederationsTable;
  sso_requests: SsoRequestsTable;
  sso_spent_assertions: SsoSpentAssertionsTable;
  saml_keys: SamlKeysTable;
  answer_methods: AnswerMethodsTable;
}

export type { Generated };
