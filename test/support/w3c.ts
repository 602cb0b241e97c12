import { gzipSync } from 'node:zlib';
import { createJWT, ES256Signer } from 'did-jwt';
import {
  createVerifiableCredentialJwt,
  createVerifiablePresentationJwt,
  type Issuer,
  type JwtCredentialPayload,
} from 'did-jwt-vc';
import type { IssuerKey } from './university.ts';

/**
 * W3C Verifiable Credentials in JWT form (`jwt_vc_json`), issued and presented with did-jwt-vc and
 * did-jwt (libraries we did not write), shaped after EBSI's published schemas: the DC4EU European
 * Student Card and the Verifiable Educational ID (VCDM 1.1, Verifiable Attestation). Issuers and
 * holders are `did:jwk` (or `did:web`) DIDs; nothing here imports src/.
 */

export const ESC_SCHEMA =
  'https://api-pilot.ebsi.eu/trusted-schemas-registry/v3/schemas/0x23039e6356ea6b703ce672e7cfac0b42765b150f63df78e2bd18ae785787f6a2';
export const VEID_SCHEMA =
  'https://api-pilot.ebsi.eu/trusted-schemas-registry/v3/schemas/0x7ff3bc76bd5e37b3d29721b8698646a722a24a4f4ab0a4ba63d4bbbd8e41ecf7';

export function didJwk(publicJwk: JsonWebKey): string {
  const { kty, crv, x, y } = publicJwk;
  return `did:jwk:${Buffer.from(JSON.stringify({ kty, crv, x, y })).toString('base64url')}`;
}

/** A did-jwt ES256 signer identity for `key` under `did` (its did:jwk by default). */
export function identity(key: IssuerKey, did = didJwk(key.publicJwk)): Issuer {
  return { did, signer: ES256Signer(Buffer.from(key.privateJwk.d!, 'base64url')), alg: 'ES256' };
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
const iso = (date: Date) => date.toISOString().replace(/\.\d{3}Z$/, 'Z');
const DAY = 24 * 3600 * 1000;

export interface CredentialOptions {
  /** Replaces `vc.type`. */
  type?: string[];
  subject?: Record<string, unknown>;
  credentialStatus?: { id: string; type: string } & Record<string, unknown>;
  /** Sign with this header instead (an alg: none credential is made by hand: see unsigned()). */
  kid?: string;
  /** More JWS header parameters (`x5c`). */
  header?: Record<string, unknown>;
  /** VCDM 2.0 (`validFrom` / `validUntil`, the v2 context) instead of 1.1. */
  v2?: boolean;
  validUntil?: Date;
  /** Bind to this holder key (`cnf.jwk`) instead of the subject's DID (then neither `sub` nor `credentialSubject.id`). */
  cnf?: JsonWebKey;
}

/** A European Student Card (EBSI VA, VCDM 1.1) for `holderDid`, issued by `issuer` at `now`. */
export async function europeanStudentCard(
  issuer: Issuer,
  holderDid: string,
  now: Date,
  homeOrganisation: string,
  options: CredentialOptions = {},
): Promise<string> {
  const until = options.validUntil ?? new Date(now.getTime() + 300 * DAY);
  const vc: JwtCredentialPayload['vc'] = {
    '@context': options.v2 ? ['https://www.w3.org/ns/credentials/v2'] : ['https://www.w3.org/2018/credentials/v1'],
    type: options.type ?? ['VerifiableCredential', 'VerifiableAttestation', 'EuropeanStudentCard'],
    ...(options.v2
      ? { validFrom: iso(now), validUntil: iso(until) }
      : { issuanceDate: iso(now), expirationDate: iso(until) }),
    issuer: issuer.did,
    credentialSchema: { id: ESC_SCHEMA, type: 'FullJsonSchemaValidator2021' },
    credentialSubject: {
      ...(options.cnf ? {} : { id: holderDid }),
      esi: `urn:schac:personalUniqueCode:int:esi:${homeOrganisation}:2025-0042`,
      academicLevel: 'Master',
      givenName: 'Ana',
      ...options.subject,
    },
    ...(options.credentialStatus ? { credentialStatus: options.credentialStatus } : {}),
  };
  const extra = { ...(options.kid ? { kid: options.kid } : {}), ...options.header };
  const header = Object.keys(extra).length ? { header: { alg: 'ES256', ...extra } as { alg: string } } : {};
  // did-jwt-vc writes the VCDM 1.1 JWT encoding only; VCDM 2.0 is VC-JOSE-COSE's vc+jwt, by did-jwt.
  if (options.v2)
    return createJWT(
      { ...vc, sub: holderDid, nbf: seconds(now), iat: seconds(now) },
      { issuer: issuer.did, signer: issuer.signer },
      { alg: 'ES256', typ: 'vc+jwt' as 'JWT', ...extra },
    );
  const binding = options.cnf ? { cnf: { jwk: options.cnf } } : { sub: holderDid };
  return createVerifiableCredentialJwt(
    { ...binding, nbf: seconds(now), iat: seconds(now), exp: seconds(until), vc },
    issuer,
    header,
  );
}

/** A Verifiable Educational ID (EBSI, VCDM 1.1) with eduPerson and SCHAC attributes. */
export async function verifiableEducationalId(
  issuer: Issuer,
  holderDid: string,
  now: Date,
  homeOrganisation: string,
  affiliation = 'student',
): Promise<string> {
  const until = new Date(now.getTime() + 365 * DAY);
  return createVerifiableCredentialJwt(
    {
      sub: holderDid,
      nbf: seconds(now),
      exp: seconds(until),
      vc: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiableCredential', 'VerifiableAttestation', 'VerifiableEducationalID'],
        issuer: issuer.did,
        issuanceDate: iso(now),
        expirationDate: iso(until),
        credentialSchema: { id: VEID_SCHEMA, type: 'FullJsonSchemaValidator2021' },
        credentialSubject: {
          id: holderDid,
          eduPersonPrimaryAffiliation: affiliation,
          schacPersonalUniqueCode: [`urn:schac:personalUniqueCode:int:esi:${homeOrganisation}:77`],
          schacHomeOrganization: homeOrganisation,
        },
      },
    },
    issuer,
  );
}

/** The VP JWT presenting `credential`, signed by the holder, bound to `nonce` and `aud`. */
export async function presentJwtVc(
  credential: string,
  holder: Issuer,
  binding: { nonce: string; aud: string; now: Date },
): Promise<string> {
  return createVerifiablePresentationJwt(
    {
      iat: seconds(binding.now),
      vp: {
        '@context': ['https://www.w3.org/2018/credentials/v1'],
        type: ['VerifiablePresentation'],
        verifiableCredential: [credential],
      },
    },
    holder,
    { challenge: binding.nonce, domain: binding.aud },
  );
}

/**
 * A VCDM 2.0 presentation (VC-JOSE-COSE `vp+jwt`, made with did-jwt) enveloping the credential as
 * an `EnvelopedVerifiableCredential` data: URL.
 */
export async function presentJwtVcV2(
  credential: string,
  holder: Issuer,
  binding: { nonce: string; aud: string; now: Date },
): Promise<string> {
  return createJWT(
    {
      '@context': ['https://www.w3.org/ns/credentials/v2'],
      type: ['VerifiablePresentation'],
      verifiableCredential: [
        {
          '@context': ['https://www.w3.org/ns/credentials/v2'],
          type: 'EnvelopedVerifiableCredential',
          id: `data:application/vc+jwt,${credential}`,
        },
      ],
      nonce: binding.nonce,
      aud: binding.aud,
      iat: seconds(binding.now),
    },
    { issuer: holder.did, signer: holder.signer },
    { alg: 'ES256', typ: 'vp+jwt' as 'JWT' },
  );
}

/** `jwt` re-encoded with `alg: none` and no signature: an unsigned credential. */
export function unsigned(jwt: string): string {
  const [, payload] = jwt.split('.');
  const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
  return `${header}.${payload}.`;
}

/** A BitstringStatusListCredential (VCDM 2.0, JWT) of `size` entries with `revoked` set, signed by `issuer`. */
export async function bitstringStatusList(
  issuer: Issuer,
  url: string,
  now: Date,
  revoked: number[],
  options: { size?: number; statusList2021?: boolean } = {},
): Promise<string> {
  const bits = Buffer.alloc((options.size ?? 16 * 1024) / 8);
  for (const index of revoked) bits[index >> 3]! |= 0x80 >> (index & 7);
  const encoded = gzipSync(bits).toString('base64url');
  // EBSI's StatusList2021 (VCDM 1.1, `vc` claim, no multibase prefix) or the W3C Bitstring Status List.
  const credential = options.statusList2021
    ? {
        vc: {
          '@context': ['https://www.w3.org/2018/credentials/v1'],
          id: url,
          type: ['VerifiableCredential', 'StatusList2021Credential'],
          issuer: issuer.did,
          issuanceDate: iso(now),
          credentialSubject: {
            id: `${url}#list`,
            type: 'StatusList2021',
            statusPurpose: 'revocation',
            encodedList: encoded,
          },
        },
      }
    : {
        '@context': ['https://www.w3.org/ns/credentials/v2'],
        id: url,
        type: ['VerifiableCredential', 'BitstringStatusListCredential'],
        issuer: issuer.did,
        validFrom: iso(now),
        credentialSubject: {
          id: `${url}#list`,
          type: 'BitstringStatusList',
          statusPurpose: 'revocation',
          encodedList: `u${encoded}`,
        },
      };
  return createJWT(
    credential,
    { issuer: issuer.did, signer: issuer.signer },
    // did-jwt types typ as 'JWT'; VC-JOSE-COSE's is vc+jwt.
    { alg: 'ES256', typ: 'vc+jwt' as 'JWT' },
  );
}

export function statusEntry(
  url: string,
  index: number,
  type = 'BitstringStatusListEntry',
): { id: string; type: string } & Record<string, unknown> {
  return {
    id: `${url}#${index}`,
    type,
    statusPurpose: 'revocation',
    statusListIndex: String(index),
    statusListCredential: url,
  };
}
