import 'reflect-metadata'; // @peculiar/x509 resolves its parsers through tsyringe, which needs it loaded first
import * as x509 from '@peculiar/x509';
import type { Environment } from '../../domain/environment.ts';
import type { TrustedIssuer } from '../../domain/credentials.ts';
import { listIssuers } from '../../store/issuers.ts';
import type { Db } from '../../store/db.ts';

/**
 * DCQL `trusted_authorities` (OpenID4VP 1.0 §6.1.1, type `aki`): the key identifiers of the X.509
 * trust anchors of the registry, so that a wallet offers only credentials the service can trust.
 * A wallet must then leave out every credential whose chain does not reach one of them, so the
 * query carries them only when every entry trusted for SD-JWT VCs in the environment trusts
 * through anchors alone (each with a subject key identifier); an entry with raw keys or issuer
 * metadata (the sandbox universities, for one) would otherwise be filtered out of the wallet.
 */
export function akiValues(issuers: readonly TrustedIssuer[]): string[] | undefined {
  const usable = issuers.filter(
    (issuer) => issuer.keys.sdJwtVc !== undefined || (issuer.anchors?.length ?? 0) > 0 || issuer.metadataIssuer,
  );
  if (usable.length === 0) return undefined;
  const values = new Set<string>();
  for (const issuer of usable) {
    if (issuer.keys.sdJwtVc !== undefined || issuer.metadataIssuer || !issuer.anchors?.length) return undefined;
    for (const pem of issuer.anchors) {
      const ski = subjectKeyIdentifier(pem);
      if (ski === undefined) return undefined;
      values.add(ski);
    }
  }
  return [...values];
}

function subjectKeyIdentifier(pem: string): string | undefined {
  try {
    const extension = new x509.X509Certificate(pem).getExtension(x509.SubjectKeyIdentifierExtension);
    return extension ? Buffer.from(extension.keyId, 'hex').toString('base64url') : undefined;
  } catch {
    return undefined;
  }
}

/** The `aki` values for a session's environment, or undefined when the query must not carry any. */
export async function trustedAuthorities(db: Db, environment: Environment): Promise<string[] | undefined> {
  return akiValues(await listIssuers(db, environment));
}
