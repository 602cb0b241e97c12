import type { Clock } from '../domain/clock.ts';
import { KEY_OF_FORMAT, type CredentialFormat, type TrustRegistry } from '../domain/credentials.ts';
import type { Environment } from '../domain/environment.ts';
import { newId } from '../domain/ids.ts';
import { sandboxIssuers } from '../proofs/issuer-definitions.ts';
import type { Db } from '../store/db.ts';
import { insertIssuer, listIssuers } from '../store/issuers.ts';

/** The trust registry as stored: read on every verification, so a removal takes effect at once. */
export function databaseTrustRegistry(db: Db): TrustRegistry {
  return {
    async issuers(environment: Environment, format: CredentialFormat) {
      const all = await listIssuers(db, environment);
      return all.filter((issuer) => issuer.keys[KEY_OF_FORMAT[format]] !== undefined);
    },
  };
}

/** Seeds the sandbox universities on first start; an existing entry (same domain) is left alone. */
export async function seedSandboxIssuers(db: Db, clock: Clock): Promise<number> {
  let added = 0;
  for (const issuer of sandboxIssuers()) {
    if (await insertIssuer(db, { ...issuer, id: newId('issuer', clock) }, clock.now().toISOString())) added++;
  }
  return added;
}
