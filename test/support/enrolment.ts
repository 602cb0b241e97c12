import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import assert from 'node:assert/strict';
import { addIssuer } from '../../src/services/trust-registry.ts';
import type { Harness } from './harness.ts';
import { newIssuerKey, type IssuerKey } from './university.ts';

/**
 * An enrolment attestation as EU wallet pilots issue them (a URN `vct`, foreign claim names),
 * issued and presented with @sd-jwt/sd-jwt-vc: a credential Matricula did not design.
 */

export const DOMAIN = 'uni.example.edu';
export const ESI = `urn:schac:personalUniqueCode:int:esi:${DOMAIN}:12345`;

function es256Signer(privateJwk: JsonWebKey) {
  const key = createPrivateKey({ key: privateJwk as never, format: 'jwk' });
  return (data: string) => sign('sha256', Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url');
}

export interface Holder {
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

export function newHolder(): Holder {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return {
    privateJwk: privateKey.export({ format: 'jwk' }) as JsonWebKey,
    publicJwk: publicKey.export({ format: 'jwk' }) as JsonWebKey,
  };
}

/** An enrolment attestation of `claims` (over the defaults), signed by `issuer`, bound to `holder`. */
export async function issueEnrolment(
  issuer: IssuerKey,
  holder: Holder,
  now: Date,
  claims: Record<string, unknown> = {},
): Promise<string> {
  const sdjwt = new SDJwtVcInstance({
    signer: es256Signer(issuer.privateJwk),
    signAlg: 'ES256',
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: () => Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString('base64url'),
  });
  const seconds = Math.floor(now.getTime() / 1000);
  const payload = {
    vct: 'urn:eudi:enrolment:1',
    iss: `https://${DOMAIN}`,
    iat: seconds,
    exp: seconds + 300 * 24 * 3600,
    cnf: { jwk: holder.publicJwk },
    enrolment_status: 'enrolled',
    schacPersonalUniqueCode: [ESI],
    isced_level: '7',
    date_of_expiry: '2027-09-30',
    given_name: 'Ana',
    ...claims,
  };
  return sdjwt.issue(payload, {
    _sd: ['enrolment_status', 'schacPersonalUniqueCode', 'isced_level', 'date_of_expiry', 'given_name'],
  });
}

export async function presentWith(
  credential: string,
  holder: Holder,
  disclose: string[],
  binding: { nonce: string; aud: string; now: Date },
): Promise<string> {
  const sdjwt = new SDJwtVcInstance({
    hasher: digest,
    hashAlg: 'sha-256',
    kbSigner: es256Signer(holder.privateJwk),
    kbSignAlg: 'ES256',
  });
  return sdjwt.present(credential, Object.fromEntries(disclose.map((c) => [c, true])), {
    kb: { payload: { iat: Math.floor(binding.now.getTime() / 1000), aud: binding.aud, nonce: binding.nonce } },
  });
}

/** Registers the example university (a sandbox entry with a raw key) and returns its key. */
export async function registerExampleUniversity(h: Harness): Promise<IssuerKey> {
  const issuer = await newIssuerKey();
  const added = await addIssuer(h.services, {
    name: 'Example University',
    domain: DOMAIN,
    country: 'ES',
    environment: 'sandbox',
    keys: { sdJwtVc: issuer.publicJwk },
  });
  assert.ok(added.ok, JSON.stringify(added));
  return issuer;
}
