import type { Environment } from './environment.ts';

/** Who is calling: an organization, within one environment, through one API key. */
export interface Principal {
  orgId: string;
  environment: Environment;
  keyId: string;
  appId: string;
}

/**
 * A key a request was admitted under without reading it (http/auth.ts, `confirmsKey`): the one
 * write of its route stores only while this key still exists with this hash and its application is
 * active, the same checks authentication makes.
 */
export interface KeyToConfirm {
  keyId: string;
  keyHash: string;
}
