import type { Generated } from 'kysely';

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
  environment: 'sandbox' | 'live';
  status: 'active' | 'archived';
  created_at: string;
  updated_at: string;
}

export interface ApiKeysTable {
  id: string;
  app_id: string;
  org_id: string;
  name: string;
  environment: 'sandbox' | 'live';
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

export interface Database {
  organizations: OrganizationsTable;
  applications: ApplicationsTable;
  api_keys: ApiKeysTable;
  revoked_keys: RevokedKeysTable;
  idempotency_keys: IdempotencyKeysTable;
}

export type { Generated };
