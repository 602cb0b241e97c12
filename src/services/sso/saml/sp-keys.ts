import 'reflect-metadata'; // @peculiar/x509 resolves its parsers through tsyringe, which needs it loaded first
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { ConfigError, type Config } from '../../../config.ts';
import type { Clock } from '../../../domain/clock.ts';
import type { Db } from '../../../store/db.ts';
import { keyPairOnce } from '../../../store/saml-keys.ts';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

/** An RSA key and its certificate (PEM): XML signature and encryption as SAML deployments speak them. */
export interface SamlKeyPair {
  privateKeyPem: string;
  certificatePem: string;
  source: 'configured' | 'generated';
}

const VALIDITY_DAYS = 3650;

/** A self-signed RSA-2048 certificate (SHA-256), the common form of SAML metadata keys. */
export async function generateSamlKeyPair(commonName: string, now: Date) {
  const algorithm = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair;
  const certificate = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: `01${randomBytes(15).toString('hex')}`,
    name: `CN=${commonName.replace(/[,+="\\<>;#]/g, '')}`,
    notBefore: new Date(now.getTime() - 24 * 3600 * 1000),
    notAfter: new Date(now.getTime() + VALIDITY_DAYS * 24 * 3600 * 1000),
    signingAlgorithm: algorithm,
    keys,
  });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { privateKeyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY'), certificatePem: certificate.toString('pem') };
}

/** A key pair generated once per name and kept in the database, so every process uses the same. */
export async function storedKeyPair(
  deps: { db: Db; clock: Clock },
  name: string,
  commonName: string,
): Promise<SamlKeyPair> {
  const now = deps.clock.now();
  const stored = await keyPairOnce(deps.db, name, async () => ({
    name,
    ...(await generateSamlKeyPair(commonName, now)),
    createdAt: now.toISOString(),
  }));
  return { privateKeyPem: stored.privateKeyPem, certificatePem: stored.certificatePem, source: 'generated' };
}

function configuredKeyPair(keyPem: string, certificatePem: string): SamlKeyPair {
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw new ConfigError('SAML_SP_KEY_FILE', 'is not a PEM private key');
  }
  if (key.asymmetricKeyType !== 'rsa')
    throw new ConfigError('SAML_SP_KEY_FILE', 'must be an RSA key (XML signature and encryption use RSA)');
  let certificate;
  try {
    certificate = new X509Certificate(certificatePem);
  } catch {
    throw new ConfigError('SAML_SP_CERTIFICATE_FILE', 'is not a PEM certificate');
  }
  if (!certificate.checkPrivateKey(key))
    throw new ConfigError('SAML_SP_KEY_FILE', 'is not the key of SAML_SP_CERTIFICATE_FILE');
  return { privateKeyPem: keyPem, certificatePem, source: 'configured' };
}

/** The SP's signing and decryption key: the operator's files, else a generated sandbox pair. */
export async function loadSpKeys(deps: { db: Db; clock: Clock; config: Config }): Promise<SamlKeyPair> {
  const { spKeyPem, spCertificatePem } = deps.config.universityLogin;
  if (spKeyPem && spCertificatePem) return configuredKeyPair(spKeyPem, spCertificatePem);
  const host = new URL(deps.config.baseUrl).hostname;
  return storedKeyPair(deps, `sp:${host}`, `${host} SAML SP (Matricula sandbox)`);
}
