import { webcrypto } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as x509 from '@peculiar/x509';
import { CA_USAGE, certificate, newIssuerKey, pem, SIGNING_USAGE } from './university.ts';

/** An operator's request-signing key and chain, written as OPENID4VP_SIGNING_KEY_FILE and OPENID4VP_CERTIFICATE_CHAIN_FILE. */
export interface OperatorChain {
  dir: string;
  keyFile: string;
  chainFile: string;
  root: x509.X509Certificate;
  leaf: x509.X509Certificate;
  rootPem: string;
}

/**
 * A CA → intermediate → leaf chain whose leaf names `host`, in a temporary directory; the chain
 * file holds leaf and intermediate, and the root too when `withRoot` (as operators often ship it).
 */
export async function operatorChain(now: Date, host: string, options: { withRoot?: boolean } = {}) {
  const rootKey = await newIssuerKey();
  const root = await certificate(rootKey, 'Operator Root CA', now, { ca: true, keyUsage: CA_USAGE });
  const intermediateKey = await newIssuerKey();
  const intermediate = await certificate(
    intermediateKey,
    'Operator Issuing CA',
    now,
    { ca: true, pathLength: 0, keyUsage: CA_USAGE },
    { key: rootKey, cert: root },
  );
  const leafKey = await newIssuerKey();
  const leaf = await certificate(
    leafKey,
    'verify.operator.example',
    now,
    { dns: host, keyUsage: SIGNING_USAGE },
    { key: intermediateKey, cert: intermediate },
  );
  const dir = mkdtempSync(join(tmpdir(), 'matricula-operator-chain-'));
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKey.keys.privateKey));
  const keyFile = join(dir, 'key.pem');
  const chainFile = join(dir, 'chain.pem');
  writeFileSync(
    keyFile,
    `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`,
  );
  const chain = [leaf, intermediate, ...(options.withRoot ? [root] : [])];
  writeFileSync(chainFile, `${chain.map(pem).join('\n')}\n`);
  return { dir, keyFile, chainFile, root, leaf, rootPem: pem(root) } satisfies OperatorChain;
}
