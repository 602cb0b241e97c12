import 'reflect-metadata'; // @peculiar/x509 resolves its parsers through tsyringe, which needs it loaded first
import { createHash, createPrivateKey, createPublicKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint } from 'jose';
import * as x509 from '@peculiar/x509';
import { ConfigError, type Config } from '../../config.ts';
import type { Clock } from '../../domain/clock.ts';
import type { Db } from '../../store/db.ts';
import { validateOwnChain } from '../../proofs/x509.ts';
import { findSigningKey, insertSigningKeyOnce } from '../../store/openid4vp-signing-keys.ts';

/**
 * The key and certificate chain that sign OpenID4VP request objects (JAR) under the `x509_hash`
 * and `x509_san_dns` client identifier prefixes: the operator's (OPENID4VP_SIGNING_KEY_FILE and
 * OPENID4VP_CERTIFICATE_CHAIN_FILE), or else a self-signed sandbox certificate for the BASE_URL
 * host, generated on first use and kept in the database (migration 0008_openid4vp says why).
 */
export interface RequestSigner {
  /** The DNS name the certificate vouches for: the client identifier is `x509_san_dns:<host>`. */
  host: string;
  /** The chain as JOSE `x5c`: base64 DER, leaf first, without the trust anchor (HAIP 1.0). */
  x5c: string[];
  /** `x509_hash` client identifier value: base64url SHA-256 of the leaf certificate's DER. */
  x509Hash: string;
  /** The request object's `kid`: the JWK thumbprint (RFC 7638) of the signing key. */
  kid: string;
  /** The leaf is its own issuer (the sandbox certificate): HAIP wallets refuse such a request. */
  selfSigned: boolean;
  privateKey: KeyObject;
  alg: 'ES256';
  source: 'configured' | 'sandbox';
}

/** The signer each configuration loaded, for what must be built without waiting (openid4vpUri's client_id). */
const loaded = new WeakMap<Config, RequestSigner>();

/** The signer `config` loaded already (deps.requestSigner()), if it did. */
export function loadedRequestSigner(config: Config): RequestSigner | undefined {
  return loaded.get(config);
}

async function isSelfSigned(certificate: x509.X509Certificate): Promise<boolean> {
  return certificate.subject === certificate.issuer && (await certificate.verify({ signatureOnly: true }));
}

/** What a signer shows of its chain: `x5c` without a self-signed anchor at its end, the hash, the kid. */
async function identity(chain: x509.X509Certificate[], privateKey: KeyObject) {
  const last = chain[chain.length - 1]!;
  const shown = chain.length > 1 && (await isSelfSigned(last)) ? chain.slice(0, -1) : chain;
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' });
  return {
    x5c: shown.map((c) => Buffer.from(c.rawData).toString('base64')),
    x509Hash: createHash('sha256').update(Buffer.from(chain[0]!.rawData)).digest('base64url'),
    kid: await calculateJwkThumbprint({ kty: jwk.kty!, crv: jwk.crv, x: jwk.x, y: jwk.y }),
    selfSigned: await isSelfSigned(chain[0]!),
  };
}

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const SANDBOX_VALIDITY_DAYS = 3650;

function toX5c(pemChain: string): x509.X509Certificate[] {
  return x509.PemConverter.decode(pemChain).map((der) => new x509.X509Certificate(der));
}

function sanDnsNames(certificate: x509.X509Certificate): string[] {
  const san = certificate.getExtension(x509.SubjectAlternativeNameExtension);
  return san ? san.names.items.filter((name) => name.type === 'dns').map((name) => name.value) : [];
}

async function sameKey(privateKey: KeyObject, certificate: x509.X509Certificate): Promise<boolean> {
  const fromCertificate = await webcrypto.subtle.exportKey('jwk', await certificate.publicKey.export());
  const fromKey = createPublicKey(privateKey).export({ format: 'jwk' });
  return fromCertificate.x === fromKey.x && fromCertificate.y === fromKey.y && fromKey.crv === 'P-256';
}

async function configuredSigner(host: string, keyPem: string, chainPem: string, now: Date): Promise<RequestSigner> {
  let privateKey: KeyObject;
  let chain: x509.X509Certificate[];
  try {
    privateKey = createPrivateKey(keyPem);
  } catch {
    throw new ConfigError('OPENID4VP_SIGNING_KEY_FILE', 'is not a PEM private key');
  }
  try {
    chain = toX5c(chainPem);
  } catch {
    throw new ConfigError('OPENID4VP_CERTIFICATE_CHAIN_FILE', 'is not a PEM certificate chain');
  }
  if (privateKey.asymmetricKeyType !== 'ec' || privateKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1')
    throw new ConfigError('OPENID4VP_SIGNING_KEY_FILE', 'must be a P-256 (ES256) private key');
  const leaf = chain[0];
  if (!leaf) throw new ConfigError('OPENID4VP_CERTIFICATE_CHAIN_FILE', 'holds no certificate');
  if (!sanDnsNames(leaf).includes(host))
    throw new ConfigError(
      'OPENID4VP_CERTIFICATE_CHAIN_FILE',
      `must start with a certificate whose subjectAltName has the DNS name ${host} (the BASE_URL host); it has ${sanDnsNames(leaf).join(', ') || 'none'}`,
    );
  if (!(await sameKey(privateKey, leaf)))
    throw new ConfigError('OPENID4VP_SIGNING_KEY_FILE', 'is not the key of the first certificate of the chain');
  // The same path validation as credential chains (proofs/x509.ts), to the chain's last certificate.
  const valid = await validateOwnChain(
    chain.map((c) => new Uint8Array(c.rawData)),
    now,
  );
  if (!valid.ok) throw new ConfigError('OPENID4VP_CERTIFICATE_CHAIN_FILE', `is not a valid chain: ${valid.message}`);
  return { host, ...(await identity(chain, privateKey)), privateKey, alg: 'ES256', source: 'configured' };
}

/** A self-signed P-256 certificate whose subjectAltName is `host`. */
async function generateSandboxCertificate(host: string, now: Date) {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: `01${randomBytes(15).toString('hex')}`,
    name: `CN=${host.replace(/[,+="\\<>;#]/g, '')}, O=Matricula sandbox`,
    notBefore: new Date(now.getTime() - 24 * 3600 * 1000),
    notAfter: new Date(now.getTime() + SANDBOX_VALIDITY_DAYS * 24 * 3600 * 1000),
    signingAlgorithm: algorithm,
    keys,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }]),
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    ],
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return {
    privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'),
    certificatePem: certificate.toString('pem'),
  };
}

async function sandboxSigner(db: Db, host: string, now: Date): Promise<RequestSigner> {
  const stored =
    (await findSigningKey(db, host)) ??
    (await insertSigningKeyOnce(db, {
      host,
      ...(await generateSandboxCertificate(host, now)),
      createdAt: now.toISOString(),
    }));
  const privateKey = createPrivateKey(stored.privateKeyPem);
  return {
    host,
    ...(await identity(toX5c(stored.certificatePem), privateKey)),
    privateKey,
    alg: 'ES256',
    source: 'sandbox',
  };
}

/**
 * The signer of this configuration; ConfigError when the operator's key or chain is unusable (the
 * composition root loads it at start, so a bad chain stops the service with one line).
 */
export async function loadRequestSigner(deps: { db: Db; clock: Clock; config: Config }): Promise<RequestSigner> {
  const host = new URL(deps.config.baseUrl).hostname;
  const { signingKeyPem, certificateChainPem } = deps.config.openid4vp;
  const signer =
    signingKeyPem && certificateChainPem
      ? await configuredSigner(host, signingKeyPem, certificateChainPem, deps.clock.now())
      : await sandboxSigner(deps.db, host, deps.clock.now());
  loaded.set(deps.config, signer);
  return signer;
}

/** The certificate of a signer, PEM, leaf first: what a wallet tester pins as trust anchor. */
export function certificateChainPem(signer: RequestSigner): string {
  return signer.x5c.map((der) => x509.PemConverter.encode(Buffer.from(der, 'base64'), 'CERTIFICATE')).join('\n');
}
