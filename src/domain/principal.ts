import type { Environment } from './environment.ts';

/** Who is calling: an organization, within one environment, through one API key. */
export interface Principal {
  orgId: string;
  environment: Environment;
  keyId: string;
  appId: string;
}
