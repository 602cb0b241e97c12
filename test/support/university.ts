import 'reflect-metadata';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { digest } from '@sd-jwt/crypto-nodejs';
import { createHeaderAndPayload, StatusList, type BitsPerStatus } from '@sd-jwt/jwt-status-list';
import { presentCredential, STUDENT_CREDENTIAL_VCT } from '../../src/proofs/sd-jwt-vc/credential.ts';
import { holderKeyPair } from '../../src/proofs/sd-jwt-vc/keys.ts';
import { base64urlEncode, signJws } from '../../src/proofs/sd-jwt-vc/jose.ts';

/**
 * A real university, played locally: its keys and certificates (generated here with
 * @peculiar/x509, nothing downloaded), the credentials and status lists it signs, and an HTTP
 * server on 127.0.0.1 that publishes its metadata, JWKS and status lists, counting every request.
 */

x509.cryptoProvider.set(webcrypto as unknown as Crypto);
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 24 * 60 * 60 * 1000;

export interface IssuerKey {
  keys: CryptoKeyPair;
  privateJwk: JsonWebKey;
  publicJwk: JsonWebKey;
}

export async function newIssuerKey(): Promise<IssuerKey> {
  const keys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const privateJwk = (await webcrypto.subtle.exportKey('jwk', keys.privateKey)) as JsonWebKey;
  const { kty, crv, x, y } = privateJwk;
  return { keys, privateJwk, publicJwk: { kty, crv, x, y } };
}

export interface CertOptions {
  notBefore?: Date;
  notAfter?: Date;
  keyUsage?: x509.KeyUsageFlags;
  ca?: boolean;
  pathLength?: number;
  dns?: string;
  uri?: string;
}

let serial = 1;

/** A certificate for `subject` signed by `issuer` (self-signed without one). */
export async function certificate(
  subject: IssuerKey,
  name: string,
  now: Date,
  options: CertOptions,
  issuer?: { key: IssuerKey; cert: x509.X509Certificate },
): Promise<x509.X509Certificate> {
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(options.ca ?? false, options.pathLength, true),
  ];
  if (options.keyUsage !== undefined) extensions.push(new x509.KeyUsagesExtension(options.keyUsage, true));
  const names: x509.JsonGeneralName[] = [];
  if (options.dns) names.push({ type: 'dns', value: options.dns });
  if (options.uri) names.push({ type: 'url', value: options.uri });
  if (names.length) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  return x509.X509CertificateGenerator.create({
    serialNumber: (serial++).toString(16).padStart(4, '0'),
    subject: `CN=${name}`,
    issuer: issuer ? issuer.cert.subject : `CN=${name}`,
    notBefore: options.notBefore ?? new Date(now.getTime() - DAY),
    notAfter: options.notAfter ?? new Date(now.getTime() + 365 * DAY),
    signingAlgorithm: ALG,
    publicKey: subject.keys.publicKey,
    signingKey: (issuer?.key ?? subject).keys.privateKey,
    extensions,
  });
}

export const CA_USAGE = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;
export const SIGNING_USAGE = x509.KeyUsageFlags.digitalSignature;

export function pem(cert: x509.X509Certificate): string {
  return cert.toString('pem');
}

export function x5c(...certs: x509.X509Certificate[]): string[] {
  return certs.map((cert) => Buffer.from(cert.rawData).toString('base64'));
}

/** An issuer's signing function in compact-JWS form. */
function signed(header: Record<string, unknown>, payload: Record<string, unknown>, key: IssuerKey): string {
  const input = `${base64urlEncode(JSON.stringify(header))}.${base64urlEncode(JSON.stringify(payload))}`;
  return `${input}.${signJws(input, key.privateJwk, 'ES256')}`;
}

export interface CredentialOptions {
  iss: string;
  key: IssuerKey;
  domain: string;
  now: Date;
  header?: Record<string, unknown>;
  status?: { uri: string; idx: number };
}

/** A StudentCredential of `domain`, signed by `key`, presented with key binding for nonce/audience at `now`. */
export async function presentation(options: CredentialOptions, nonce: string, audience: string): Promise<string> {
  const sdjwt = new SDJwtVcInstance({
    signer: (data: string) => signJws(data, options.key.privateJwk, 'ES256'),
    signAlg: 'ES256',
    hasher: digest,
    hashAlg: 'sha-256',
    saltGenerator: () => base64urlEncode(webcrypto.getRandomValues(new Uint8Array(16))),
  });
  const seconds = Math.floor(options.now.getTime() / 1000);
  const credential = await sdjwt.issue(
    {
      vct: STUDENT_CREDENTIAL_VCT,
      iss: options.iss,
      iat: seconds,
      exp: seconds + 180 * 24 * 3600,
      cnf: { jwk: holderKeyPair('student').publicJwk },
      is_active_student: true,
      university_domain: options.domain,
      valid_until: new Date(options.now.getTime() + 180 * DAY).toISOString(),
      ...(options.status ? { status: { status_list: options.status } } : {}),
    },
    { _sd: ['is_active_student', 'university_domain', 'valid_until'] },
    { header: { typ: 'dc+sd-jwt', ...options.header } },
  );
  return presentCredential(credential, 'student', {
    nonce,
    audience,
    now: options.now,
    disclose: ['is_active_student', 'valid_until'],
  });
}

export interface StatusListOptions {
  uri: string;
  key: IssuerKey;
  now: Date;
  statuses?: Record<number, number>;
  size?: number;
  bits?: BitsPerStatus;
  ttl?: number;
  exp?: number;
  header?: Record<string, unknown>;
  payload?: Record<string, unknown>;
}

/** A status list token (`typ: statuslist+jwt`) built with @sd-jwt/jwt-status-list. */
export function statusListToken(options: StatusListOptions): string {
  const list = new StatusList(new Array<number>(options.size ?? 1024).fill(0), options.bits ?? 2);
  for (const [idx, status] of Object.entries(options.statuses ?? {})) list.setStatus(Number(idx), status);
  const iat = Math.floor(options.now.getTime() / 1000);
  const { header, payload } = createHeaderAndPayload(
    list,
    { sub: options.uri, iat, exp: options.exp ?? iat + 3600, ...(options.ttl ? { ttl: options.ttl } : {}) },
    { alg: 'ES256', typ: 'statuslist+jwt' },
  );
  return signed({ ...header, ...options.header }, { ...payload, ...options.payload }, options.key);
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The university's web server on 127.0.0.1: routes by path, with a request count per path. */
export class UniversityServer {
  readonly routes = new Map<string, Handler>();
  readonly hits = new Map<string, number>();
  private server?: Server;
  private readonly hanging = new Set<ServerResponse>();
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const path = req.url ?? '/';
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1);
      const handler = this.routes.get(path);
      if (handler) handler(req, res);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  json(path: string, body: unknown, headers: Record<string, string> = {}): void {
    this.routes.set(path, (_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body)),
    );
  }

  text(path: string, body: () => string | Buffer, headers: Record<string, string> = {}): void {
    this.routes.set(path, (_req, res) => res.writeHead(200, headers).end(body()));
  }

  /** A path that accepts the request and never answers. */
  hang(path: string): void {
    this.routes.set(path, (_req, res) => this.hanging.add(res));
  }

  count(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
