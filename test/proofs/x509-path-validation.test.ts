import 'reflect-metadata';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import * as x509 from '@peculiar/x509';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, NameConstraints } from '@peculiar/asn1-x509';
import { ConfigError } from '../../src/config.ts';
import { TestClock } from '../../src/domain/clock.ts';
import { EXTENDED_KEY_USAGES } from '../../src/domain/credentials.ts';
import { noMetrics } from '../../src/domain/metrics.ts';
import { createVerifiers } from '../../src/proofs/formats.ts';
import { validateChain, validateOwnChain, validatePath, type PathCheck } from '../../src/proofs/x509.ts';
import { CachingIssuerPublications } from '../../src/services/issuer-publications.ts';
import { loadRequestSigner } from '../../src/services/openid4vp/signer.ts';
import { STUDENT_CREDENTIAL_PROFILE } from '../../src/domain/built-in-profiles.ts';
import { checkPresentation, type PresentationOutcome } from '../../src/services/presentations.ts';
import { addIssuer, databaseTrustRegistry } from '../../src/services/trust-registry.ts';
import { createGuardedDispatcher } from '../../src/outbound/ssrf.ts';
import { createTestStore, forEachDialect, testConfig, type TestStore } from '../support/harness.ts';
import {
  newIssuerKey,
  presentation,
  statusListToken,
  UniversityServer,
  type IssuerKey,
} from '../support/university.ts';
import { serviceArgs } from '../support/service-process.ts';

/**
 * RFC 5280 path validation of every chain the service relies on (issue 24, item 5): credentials'
 * and status lists' `x5c`, and the operator's OpenID4VP request certificate chain. Certificates
 * are made here with @peculiar/x509, one case per rule, at the validator and end to end.
 */

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const DAY = 24 * 3600 * 1000;
const NOW = new Date('2026-06-01T12:00:00Z');
const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const CA_USAGE = x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign;
const SIGNING_USAGE = x509.KeyUsageFlags.digitalSignature;
const UNI_A = 'uni-a.example.edu';
const UNI_B = 'uni-b.example.edu';

interface Key {
  keys: CryptoKeyPair;
}

interface Issued {
  key: Key;
  cert: x509.X509Certificate;
}

async function ecKey(): Promise<Key> {
  return { keys: (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as CryptoKeyPair };
}

async function rsaKey(bits: number, hash = 'SHA-256'): Promise<Key> {
  const algorithm = { name: 'RSASSA-PKCS1-v1_5', modulusLength: bits, publicExponent: new Uint8Array([1, 0, 1]), hash };
  return { keys: (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as CryptoKeyPair };
}

async function edKey(): Promise<Key> {
  return { keys: (await webcrypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign', 'verify'])) as CryptoKeyPair };
}

interface Names {
  dns?: string[];
  uri?: string[];
}

interface Spec {
  name: string;
  key: Key;
  issuer?: Issued;
  ca?: boolean;
  pathLength?: number;
  keyUsage?: x509.KeyUsageFlags;
  dns?: string[];
  uri?: string[];
  permitted?: Names;
  excluded?: Names;
  eku?: string[];
  policies?: { ids: string[]; critical: boolean };
  extensions?: x509.Extension[];
  /** The hash of the issuer's signature over this certificate (SHA-256 by default). */
  hash?: string;
  notBefore?: Date;
  notAfter?: Date;
}

function subtrees(names: Names): GeneralSubtrees {
  return new GeneralSubtrees([
    ...(names.dns ?? []).map((dNSName) => new GeneralSubtree({ base: new GeneralName({ dNSName }) })),
    ...(names.uri ?? []).map(
      (uniformResourceIdentifier) => new GeneralSubtree({ base: new GeneralName({ uniformResourceIdentifier }) }),
    ),
  ]);
}

/** A nameConstraints extension (critical, as RFC 5280 requires), built with @peculiar/asn1-x509. */
function nameConstraints(permitted?: Names, excluded?: Names): x509.Extension {
  const value = new NameConstraints({
    ...(permitted ? { permittedSubtrees: subtrees(permitted) } : {}),
    ...(excluded ? { excludedSubtrees: subtrees(excluded) } : {}),
  });
  return new x509.Extension('2.5.29.30', true, AsnConvert.serialize(value));
}

let serial = 1;

async function cert(spec: Spec): Promise<Issued> {
  const signer = spec.issuer?.key ?? spec.key;
  const algorithmName = signer.keys.privateKey.algorithm.name;
  const hash = spec.hash ?? 'SHA-256';
  const signingAlgorithm =
    algorithmName === 'ECDSA'
      ? { name: 'ECDSA', hash }
      : algorithmName === 'Ed25519'
        ? { name: 'Ed25519' }
        : { name: algorithmName, hash: (signer.keys.privateKey.algorithm as RsaHashedKeyAlgorithm).hash };
  const extensions: x509.Extension[] = [new x509.BasicConstraintsExtension(spec.ca ?? false, spec.pathLength, true)];
  extensions.push(new x509.KeyUsagesExtension(spec.keyUsage ?? (spec.ca ? CA_USAGE : SIGNING_USAGE), true));
  const names: x509.JsonGeneralName[] = [
    ...(spec.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(spec.uri ?? []).map((value) => ({ type: 'url' as const, value })),
  ];
  if (names.length) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  if (spec.permitted || spec.excluded) extensions.push(nameConstraints(spec.permitted, spec.excluded));
  if (spec.eku) extensions.push(new x509.ExtendedKeyUsageExtension(spec.eku, false));
  if (spec.policies) extensions.push(new x509.CertificatePolicyExtension(spec.policies.ids, spec.policies.critical));
  extensions.push(...(spec.extensions ?? []));
  const certificate = await x509.X509CertificateGenerator.create({
    serialNumber: (serial++).toString(16).padStart(4, '0'),
    subject: `CN=${spec.name}`,
    issuer: spec.issuer ? spec.issuer.cert.subject : `CN=${spec.name}`,
    notBefore: spec.notBefore ?? new Date(NOW.getTime() - DAY),
    notAfter: spec.notAfter ?? new Date(NOW.getTime() + 365 * DAY),
    signingAlgorithm,
    publicKey: spec.key.keys.publicKey,
    signingKey: signer.keys.privateKey,
    extensions,
  });
  return { key: spec.key, cert: certificate };
}

function der(...issued: Issued[]): Uint8Array[] {
  return issued.map((i) => new Uint8Array(i.cert.rawData));
}

function b64(...issued: Issued[]): string[] {
  return issued.map((i) => Buffer.from(i.cert.rawData).toString('base64'));
}

function accepted(check: PathCheck | { ok: boolean; message?: string }) {
  assert.equal(check.ok, true, 'message' in check ? check.message : undefined);
}

function refused(check: PathCheck | { ok: boolean; message?: string }, message: RegExp) {
  assert.equal(check.ok, false, 'expected a refusal');
  if (!check.ok && 'message' in check) assert.match(check.message!, message);
}

/** A federation root, its CA key, and a leaf factory under any CA. */
let root: Issued;
async function leaf(issuer: Issued, options: Partial<Spec> = {}): Promise<Issued> {
  return cert({ name: 'issuer', key: options.key ?? (await ecKey()), issuer, dns: [UNI_A], ...options });
}
async function subCa(issuer: Issued, options: Partial<Spec> = {}): Promise<Issued> {
  return cert({ name: options.name ?? 'Sub CA', key: await ecKey(), issuer, ca: true, ...options });
}

describe('X.509 path validation (validator)', () => {
  before(async () => {
    root = await cert({ name: 'Federation Root', key: await ecKey(), ca: true });
  });

  it('a good chain verifies: leaf, intermediate, anchor; the anchor may end the chain', async () => {
    const intermediate = await subCa(root, { pathLength: 0 });
    const end = await leaf(intermediate);
    accepted(await validatePath(der(end, intermediate), der(root)[0]!, NOW));
    accepted(await validatePath(der(end, intermediate, root), der(root)[0]!, NOW));
    accepted(await validateChain(b64(end, intermediate), [root.cert.toString('pem')], `https://${UNI_A}`, NOW));
    // Another anchor: no path.
    const otherRoot = await cert({ name: 'Other Root', key: await ecKey(), ca: true });
    refused(await validatePath(der(end, intermediate), der(otherRoot)[0]!, NOW), /does not lead to the trust anchor/);
  });

  it('an Ed25519 chain verifies (signatures are checked by node:crypto through the engine hook)', async () => {
    const edRoot = await cert({ name: 'Ed Root', key: await edKey(), ca: true });
    const edLeaf = await leaf(edRoot, { key: await edKey() });
    accepted(await validatePath(der(edLeaf), der(edRoot)[0]!, NOW));
    const forged = await leaf(root, { key: await edKey() });
    refused(await validatePath(der(forged), der(edRoot)[0]!, NOW), /does not lead/);
  });

  it("name constraints: the anchor's own permitted and excluded dNSName hold", async () => {
    const constrainedRoot = await cert({
      name: 'Root of B',
      key: await ecKey(),
      ca: true,
      permitted: { dns: [UNI_B] },
    });
    accepted(await validatePath(der(await leaf(constrainedRoot, { dns: [UNI_B] })), der(constrainedRoot)[0]!, NOW));
    accepted(
      await validatePath(der(await leaf(constrainedRoot, { dns: [`id.${UNI_B}`] })), der(constrainedRoot)[0]!, NOW),
    );
    refused(
      await validatePath(der(await leaf(constrainedRoot, { dns: [UNI_A] })), der(constrainedRoot)[0]!, NOW),
      /uni-a\.example\.edu is outside the names the anchor certificate permits/,
    );
    const excludingRoot = await cert({
      name: 'Root not of A',
      key: await ecKey(),
      ca: true,
      excluded: { dns: [UNI_A] },
    });
    refused(
      await validatePath(der(await leaf(excludingRoot, { dns: [UNI_A] })), der(excludingRoot)[0]!, NOW),
      /uni-a\.example\.edu is excluded by the anchor certificate/,
    );
    accepted(await validatePath(der(await leaf(excludingRoot, { dns: [UNI_B] })), der(excludingRoot)[0]!, NOW));
  });

  it("name constraints: an intermediate's permitted dNSName holds, for every name of the leaf", async () => {
    const subB = await subCa(root, { name: 'University B CA', permitted: { dns: [UNI_B] } });
    accepted(await validatePath(der(await leaf(subB, { dns: [UNI_B] }), subB), der(root)[0]!, NOW));
    refused(
      await validatePath(der(await leaf(subB, { dns: [UNI_A] }), subB), der(root)[0]!, NOW),
      /uni-a\.example\.edu is outside the names the intermediate certificate permits/,
    );
    // One permitted name does not carry another (pkijs alone accepts this).
    refused(
      await validatePath(der(await leaf(subB, { dns: [UNI_B, UNI_A] }), subB), der(root)[0]!, NOW),
      /uni-a\.example\.edu is outside/,
    );
    // A name that merely ends like the constraint is not below it.
    refused(await validatePath(der(await leaf(subB, { dns: [`evil${UNI_B}`] }), subB), der(root)[0]!, NOW), /outside/);
    // Constraints of every level apply: a sub-CA below B's cannot widen them.
    const widened = await subCa(subB, { name: 'Widened', permitted: { dns: [UNI_A] } });
    refused(
      await validatePath(der(await leaf(widened, { dns: [UNI_A] }), widened, subB), der(root)[0]!, NOW),
      /outside the names the intermediate certificate permits \(uni-b/,
    );
  });

  it("name constraints: an intermediate's excluded dNSName holds, subdomains included", async () => {
    const notA = await subCa(root, { name: 'Not A', excluded: { dns: [UNI_A] } });
    accepted(await validatePath(der(await leaf(notA, { dns: [UNI_B] }), notA), der(root)[0]!, NOW));
    refused(
      await validatePath(der(await leaf(notA, { dns: [UNI_A] }), notA), der(root)[0]!, NOW),
      /uni-a\.example\.edu is excluded by the intermediate certificate/,
    );
    refused(
      await validatePath(der(await leaf(notA, { dns: [`www.${UNI_A}`] }), notA), der(root)[0]!, NOW),
      /excluded by the intermediate/,
    );
  });

  it('name constraints: URI, permitted and excluded, at an intermediate and at the anchor', async () => {
    const subB = await subCa(root, { name: 'B by URI', permitted: { uri: [UNI_B, `.${UNI_B}`] } });
    const uriLeaf = (issuer: Issued, uri: string) => leaf(issuer, { dns: [], uri: [uri] });
    accepted(await validatePath(der(await uriLeaf(subB, `https://${UNI_B}`), subB), der(root)[0]!, NOW));
    accepted(await validatePath(der(await uriLeaf(subB, `https://id.${UNI_B}/x`), subB), der(root)[0]!, NOW));
    refused(
      await validatePath(der(await uriLeaf(subB, `https://${UNI_A}`), subB), der(root)[0]!, NOW),
      /name https:\/\/uni-a\.example\.edu is outside the names the intermediate certificate permits/,
    );
    const notA = await subCa(root, { name: 'Not A by URI', excluded: { uri: [UNI_A] } });
    refused(
      await validatePath(der(await uriLeaf(notA, `https://${UNI_A}`), notA), der(root)[0]!, NOW),
      /excluded by the intermediate/,
    );
    accepted(await validatePath(der(await uriLeaf(notA, `https://${UNI_B}`), notA), der(root)[0]!, NOW));
    const uriRoot = await cert({ name: 'URI root', key: await ecKey(), ca: true, permitted: { uri: [UNI_B] } });
    refused(
      await validatePath(der(await uriLeaf(uriRoot, `https://${UNI_A}`)), der(uriRoot)[0]!, NOW),
      /outside the names the anchor certificate permits/,
    );
  });

  it('an unrecognised critical extension is refused, on the leaf or an intermediate; a non-critical one is not; a malformed or repeated one is', async () => {
    const unknown = (critical: boolean) => new x509.Extension('1.3.6.1.4.1.55555.1', critical, new Uint8Array([5, 0]));
    refused(
      await validatePath(der(await leaf(root, { extensions: [unknown(true)] })), der(root)[0]!, NOW),
      /leaf certificate is refused: it has an unrecognised critical extension 1\.3\.6\.1\.4\.1\.55555\.1/,
    );
    accepted(await validatePath(der(await leaf(root, { extensions: [unknown(false)] })), der(root)[0]!, NOW));
    // A name constraint that cannot be decoded does not silently constrain nothing.
    const garbled = await subCa(root, {
      name: 'Garbled',
      extensions: [new x509.Extension('2.5.29.30', true, new Uint8Array([5, 0]))],
    });
    refused(
      await validatePath(der(await leaf(garbled), garbled), der(root)[0]!, NOW),
      /intermediate certificate is refused: its extension 2\.5\.29\.30 cannot be decoded/,
    );
    // Nor can an extension be given twice (a second subjectAltName, a second key usage).
    refused(
      await validatePath(
        der(
          await leaf(root, { extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: UNI_B }])] }),
        ),
        der(root)[0]!,
        NOW,
      ),
      /leaf certificate is refused: it has the extension 2\.5\.29\.17 twice/,
    );
    const intermediate = await subCa(root, { extensions: [unknown(true)] });
    refused(
      await validatePath(der(await leaf(intermediate), intermediate), der(root)[0]!, NOW),
      /intermediate certificate is refused: it has an unrecognised critical extension/,
    );
  });

  it('a critical certificatePolicies naming an unknown policy is refused; anyPolicy or a non-critical one is not', async () => {
    refused(
      await validatePath(
        der(await leaf(root, { policies: { ids: ['1.3.6.1.4.1.55555.7'], critical: true } })),
        der(root)[0]!,
        NOW,
      ),
      /critical certificatePolicies names a policy not understood here \(1\.3\.6\.1\.4\.1\.55555\.7\)/,
    );
    accepted(
      await validatePath(
        der(await leaf(root, { policies: { ids: ['2.5.29.32.0'], critical: true } })),
        der(root)[0]!,
        NOW,
      ),
    );
    accepted(
      await validatePath(
        der(await leaf(root, { policies: { ids: ['1.3.6.1.4.1.55555.7'], critical: false } })),
        der(root)[0]!,
        NOW,
      ),
    );
  });

  it('EKU: a TLS-only leaf cannot sign credentials; document signing can; the allowed list is configurable', async () => {
    const { serverAuth, clientAuth, documentSigning } = EXTENDED_KEY_USAGES;
    const anchor = [root.cert.toString('pem')];
    const iss = `https://${UNI_A}`;
    const tls = await leaf(root, { eku: [serverAuth!] });
    refused(
      await validateChain(b64(tls), anchor, iss, NOW),
      /extended key usage \(serverAuth\) does not allow signing credentials/,
    );
    refused(await validateChain(b64(await leaf(root, { eku: [serverAuth!, clientAuth!] })), anchor, iss, NOW), /EKU/i);
    accepted(await validateChain(b64(await leaf(root, { eku: [documentSigning!] })), anchor, iss, NOW));
    accepted(await validateChain(b64(await leaf(root)), anchor, iss, NOW));
    // X509_ALLOWED_EKUS=serverAuth: the operator's choice.
    accepted(await validateChain(b64(tls), anchor, iss, NOW, [serverAuth!]));
    // The operator's request certificate is not judged on its EKU (wallets judge its purpose).
    accepted(await validatePath(der(tls), der(root)[0]!, NOW));
  });

  it('SHA-1 certificate signatures are refused: ecdsa-with-SHA1 and sha1WithRSAEncryption', async () => {
    refused(
      await validatePath(der(await leaf(root, { hash: 'SHA-1' })), der(root)[0]!, NOW),
      /leaf certificate is refused: it is signed with ecdsa-with-SHA1/,
    );
    const sha1Intermediate = await subCa(root, { hash: 'SHA-1' });
    refused(
      await validatePath(der(await leaf(sha1Intermediate), sha1Intermediate), der(root)[0]!, NOW),
      /intermediate certificate is refused: it is signed with ecdsa-with-SHA1/,
    );
    const rsaSha1Root = await cert({ name: 'RSA SHA-1 root', key: await rsaKey(2048, 'SHA-1'), ca: true });
    refused(
      await validatePath(der(await leaf(rsaSha1Root)), der(rsaSha1Root)[0]!, NOW),
      /signed with sha1WithRSAEncryption/,
    );
  });

  const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
  it(
    'MD5 certificate signatures are refused (certificates made by openssl)',
    { skip: hasOpenssl ? false : 'openssl is not installed' },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'matricula-x509-md5-'));
      try {
        const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
        openssl(
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          'ca.key',
          '-out',
          'ca.pem',
          '-days',
          '30',
          '-subj',
          '/CN=MD5 Root',
          '-addext',
          'basicConstraints=critical,CA:TRUE',
          '-addext',
          'keyUsage=critical,keyCertSign',
        );
        openssl(
          'req',
          '-new',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          'leaf.key',
          '-out',
          'leaf.csr',
          '-subj',
          '/CN=leaf',
        );
        writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=DNS:${UNI_A}\nkeyUsage=critical,digitalSignature\n`);
        const sign = (digest: string, out: string) =>
          openssl(
            'x509',
            '-req',
            '-in',
            'leaf.csr',
            '-CA',
            'ca.pem',
            '-CAkey',
            'ca.key',
            '-set_serial',
            '7',
            '-days',
            '10',
            `-${digest}`,
            '-extfile',
            'ext.cnf',
            '-out',
            out,
          );
        sign('md5', 'md5.pem');
        sign('sha256', 'sha256.pem');
        const derOf = (file: string) =>
          new Uint8Array(new x509.X509Certificate(readFileSync(join(dir, file), 'utf8')).rawData);
        // openssl dates its certificates from the wall clock.
        const now = new Date();
        refused(
          await validatePath([derOf('md5.pem')], derOf('ca.pem'), now),
          /leaf certificate is refused: it is signed with md5WithRSAEncryption/,
        );
        accepted(await validatePath([derOf('sha256.pem')], derOf('ca.pem'), now));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('RSA keys below 2048 bits are refused, in the leaf or a CA; 2048 bits are fine', async () => {
    refused(
      await validatePath(der(await leaf(root, { key: await rsaKey(1024) })), der(root)[0]!, NOW),
      /leaf certificate is refused: its RSA key has 1024 bits, fewer than 2048/,
    );
    const weakCa = await cert({ name: 'Weak CA', key: await rsaKey(1024), issuer: root, ca: true });
    refused(
      await validatePath(der(await leaf(weakCa), weakCa), der(root)[0]!, NOW),
      /intermediate certificate is refused: its RSA key has 1024 bits/,
    );
    const rsaCa = await cert({ name: 'RSA CA', key: await rsaKey(2048), issuer: root, ca: true });
    accepted(await validatePath(der(await leaf(rsaCa, { key: await rsaKey(2048) }), rsaCa), der(root)[0]!, NOW));
  });

  it('pathLenConstraint is honoured, at the anchor and at an intermediate', async () => {
    const tightRoot = await cert({ name: 'Tight Root', key: await ecKey(), ca: true, pathLength: 0 });
    const under = await subCa(tightRoot);
    refused(
      await validatePath(der(await leaf(under), under), der(tightRoot)[0]!, NOW),
      /the anchor certificate allows 0 intermediate CA\(s\) below it, the chain has 1/,
    );
    accepted(await validatePath(der(await leaf(tightRoot)), der(tightRoot)[0]!, NOW));
    const first = await subCa(root, { pathLength: 0 });
    const second = await subCa(first, { name: 'Second' });
    refused(
      await validatePath(der(await leaf(second), second, first), der(root)[0]!, NOW),
      /the intermediate certificate allows 0 intermediate CA\(s\) below it, the chain has 1/,
    );
    const roomy = await subCa(root, { pathLength: 1 });
    const below = await subCa(roomy, { name: 'Below' });
    accepted(await validatePath(der(await leaf(below), below, roomy), der(root)[0]!, NOW));
  });

  it("validity is judged at the caller's clock, not the wall clock", async () => {
    const past = new Date('2020-01-01T00:00:00Z');
    const old = await leaf(root, {
      notBefore: new Date(past.getTime() - DAY),
      notAfter: new Date(past.getTime() + DAY),
    });
    // Valid in 2020 to an anchor valid then too.
    const oldRoot = await cert({
      name: 'Old Root',
      key: root.key,
      ca: true,
      notBefore: new Date(past.getTime() - DAY),
      notAfter: new Date(past.getTime() + DAY),
    });
    const oldLeaf = await leaf(oldRoot, { notBefore: old.cert.notBefore, notAfter: old.cert.notAfter });
    accepted(await validatePath(der(oldLeaf), der(oldRoot)[0]!, past));
    refused(await validatePath(der(oldLeaf), der(oldRoot)[0]!, NOW), /certificate expired on/);
    const early = await leaf(root);
    refused(await validatePath(der(early), der(root)[0]!, new Date(NOW.getTime() - 3 * DAY)), /not valid before/);
  });

  it('rejections are values: garbage, a missing leaf, a loop of cross-signed CAs', async () => {
    refused(await validatePath([new Uint8Array([1, 2, 3])], der(root)[0]!, NOW), /cannot be decoded/);
    refused(await validatePath([], der(root)[0]!, NOW), /holds no certificate/);
    refused(await validateChain('nope', [root.cert.toString('pem')], `https://${UNI_A}`, NOW), /x5c must be/);
    // Two CAs with the same name certifying each other: path building must end.
    const keyX = await ecKey();
    const keyY = await ecKey();
    const x0 = await cert({ name: 'Loop', key: keyX, ca: true });
    const y = await cert({ name: 'Loop', key: keyY, issuer: x0, ca: true });
    const x = await cert({ name: 'Loop', key: keyX, issuer: y, ca: true });
    refused(await validatePath(der(await leaf(x), x, y), der(root)[0]!, NOW), /does not lead/);
  });

  it("the operator's request certificate chain is validated at start, with the same rules", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'matricula-x509-signer-'));
    try {
      const leafKey = await ecKey();
      const signerAt = async (chain: Issued[]) => {
        const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKey.keys.privateKey));
        writeFileSync(
          join(dir, 'key.pem'),
          `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`,
        );
        writeFileSync(join(dir, 'chain.pem'), chain.map((c) => c.cert.toString('pem')).join('\n'));
        const config = testConfig({
          BASE_URL: 'https://verify.example.com',
          OPENID4VP_SIGNING_KEY_FILE: join(dir, 'key.pem'),
          OPENID4VP_CERTIFICATE_CHAIN_FILE: join(dir, 'chain.pem'),
        });
        const clock = new TestClock(NOW);
        // With the operator's key and chain, the database is not used.
        return loadRequestSigner({ db: undefined as never, clock, config });
      };
      const verifierCa = await subCa(root, { name: 'Verifier CA', permitted: { dns: ['example.com'] } });
      const good = await leaf(verifierCa, { key: leafKey, dns: ['verify.example.com'] });
      assert.equal((await signerAt([good, verifierCa, root])).source, 'configured');
      assert.equal((await signerAt([good, verifierCa])).source, 'configured');
      const sha1 = await leaf(verifierCa, { key: leafKey, dns: ['verify.example.com'], hash: 'SHA-1' });
      await assert.rejects(
        signerAt([sha1, verifierCa, root]),
        (err: unknown) =>
          err instanceof ConfigError &&
          /OPENID4VP_CERTIFICATE_CHAIN_FILE is not a valid chain: the leaf certificate is refused: it is signed with ecdsa-with-SHA1/.test(
            err.message,
          ),
      );
      const elsewhereCa = await subCa(root, { name: 'Elsewhere CA', permitted: { dns: ['example.org'] } });
      const outside = await leaf(elsewhereCa, { key: leafKey, dns: ['verify.example.com'] });
      await assert.rejects(signerAt([outside, elsewhereCa]), /outside the names the anchor certificate permits/);
      const expired = await leaf(verifierCa, {
        key: leafKey,
        dns: ['verify.example.com'],
        notBefore: new Date(NOW.getTime() - 10 * DAY),
        notAfter: new Date(NOW.getTime() - DAY),
      });
      await assert.rejects(signerAt([expired, verifierCa]), /leaf certificate expired on/);
      // A lone certificate is checked by itself.
      accepted(await validateOwnChain(der(good), NOW));
      refused(await validateOwnChain(der(sha1), NOW), /ecdsa-with-SHA1/);

      // The service stops at start with one line (its clock is the system's: certificates of today).
      const today = { notBefore: new Date(Date.now() - DAY), notAfter: new Date(Date.now() + 30 * DAY) };
      const liveRoot = await cert({ name: 'Live Root', key: await ecKey(), ca: true, ...today });
      const liveSha1 = await leaf(liveRoot, { key: leafKey, dns: ['verify.example.com'], hash: 'SHA-1', ...today });
      await assert.rejects(signerAt([liveSha1, liveRoot]), /ecdsa-with-SHA1/); // writes the files
      const started = spawnSync(process.execPath, serviceArgs(), {
        env: {
          ...process.env,
          DATABASE_URL: `sqlite:${join(dir, 'matricula.sqlite')}`,
          BASE_URL: 'https://verify.example.com',
          PORT: '0',
          LOG_LEVEL: 'silent',
          OPENID4VP_SIGNING_KEY_FILE: join(dir, 'key.pem'),
          OPENID4VP_CERTIFICATE_CHAIN_FILE: join(dir, 'chain.pem'),
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(started.status, 1, started.stderr);
      assert.equal(
        started.stderr.trim(),
        'Invalid configuration: OPENID4VP_CERTIFICATE_CHAIN_FILE is not a valid chain: the leaf certificate is refused: it is signed with ecdsa-with-SHA1, which is not accepted',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/**
 * End to end, through credential verification: one federation root anchors two universities; B's
 * sub-CA, constrained to B's domain, must not be able to speak for A, in a credential or a status list.
 */
const NONCE = 'nonce_x509_path_validation_0123';
const AUDIENCE = 'http://matricula.test';

forEachDialect('X.509 path validation (credentials)', (dialect) => {
  let testStore: TestStore;
  let clock: TestClock;
  let server: UniversityServer;
  let check: (presentation: string) => Promise<PresentationOutcome>;
  let federation: Issued;
  let subB: Issued;
  let subA: Issued;

  before(async () => {
    testStore = await createTestStore(dialect);
    clock = new TestClock(NOW);
    server = await new UniversityServer().start();
    const publications = new CachingIssuerPublications({
      clock,
      dispatcher: createGuardedDispatcher({ allowPrivateTargets: true }),
      allowPrivateTargets: true,
      timeoutMs: 2000,
      maxBytes: 64 * 1024,
      metadataCacheMinSeconds: 300,
      metadataCacheMaxSeconds: 86_400,
      statusListCacheMaxSeconds: 0,
      statusListPolicy: 'fail_closed',
    });
    const registry = databaseTrustRegistry(testStore.store.db, () => {}, publications);
    const services = { verifiers: createVerifiers(), trustRegistry: registry, metrics: noMetrics };
    check = (p) =>
      checkPresentation(services, {
        format: 'sd-jwt-vc',
        presentation: p,
        nonce: NONCE,
        audience: AUDIENCE,
        environment: 'live',
        requiredClaims: ['is_active_student'],
        now: clock.now(),
        profiles: [STUDENT_CREDENTIAL_PROFILE],
      });
    federation = await cert({ name: 'Federation Root', key: await ecKey(), ca: true });
    subA = await subCa(federation, { name: 'University A CA', permitted: { dns: [UNI_A], uri: [UNI_A] } });
    subB = await subCa(federation, { name: 'University B CA', permitted: { dns: [UNI_B], uri: [UNI_B] } });
    const deps = { db: testStore.store.db, clock, config: { outboundAllowPrivateTargets: true } };
    for (const [name, domain] of [
      ['University A', UNI_A],
      ['University B', UNI_B],
    ] as const) {
      const added = await addIssuer(deps, {
        name,
        domain,
        country: 'DE',
        environment: 'live',
        anchors: [federation.cert.toString('pem')],
      });
      assert.ok(added.ok, JSON.stringify(added));
    }
  });
  after(async () => {
    await server.close();
    await testStore.drop();
  });

  /** A leaf certificate for `key` under `ca`, naming `domain`. */
  async function leafFor(key: IssuerKey, ca: Issued, domain: string, options: Partial<Spec> = {}) {
    return cert({ name: `${domain} issuer`, key, issuer: ca, dns: [domain], ...options });
  }

  function credential(key: IssuerKey, domain: string, chain: string[], status?: { uri: string; idx: number }) {
    return presentation(
      {
        iss: `https://${domain}`,
        key,
        domain,
        now: clock.now(),
        header: { x5c: chain },
        ...(status ? { status } : {}),
      },
      NONCE,
      AUDIENCE,
    );
  }

  function judged(outcome: PresentationOutcome) {
    assert.equal(outcome.kind, 'judged', JSON.stringify(outcome));
    return outcome.kind === 'judged' ? outcome.result : assert.fail();
  }

  function rejected(outcome: PresentationOutcome, reason: string, message: RegExp) {
    assert.equal(outcome.kind, 'rejected', JSON.stringify(outcome));
    if (outcome.kind !== 'rejected') return;
    assert.equal(outcome.reason, reason, outcome.message);
    assert.match(outcome.message, message);
  }

  it('each university signs as itself through its own sub-CA', async () => {
    const keyA = await newIssuerKey();
    const leafA = await leafFor(keyA, subA, UNI_A);
    const result = judged(await check(await credential(keyA, UNI_A, b64(leafA, subA))));
    assert.equal(result.verified, true);
    assert.equal(result.university?.domain, UNI_A);
    const keyB = await newIssuerKey();
    const leafB = await leafFor(keyB, subB, UNI_B);
    assert.equal(judged(await check(await credential(keyB, UNI_B, b64(leafB, subB, federation)))).verified, true);
  });

  it("university B's sub-CA cannot issue a leaf for university A, named by DNS or by URI", async () => {
    const key = await newIssuerKey();
    const forged = await leafFor(key, subB, UNI_A);
    rejected(
      await check(await credential(key, UNI_A, b64(forged, subB))),
      'untrusted_issuer',
      /uni-a\.example\.edu is outside the names the intermediate certificate permits/,
    );
    const both = await leafFor(key, subB, UNI_B, { dns: [UNI_B, UNI_A] });
    rejected(await check(await credential(key, UNI_A, b64(both, subB))), 'untrusted_issuer', /outside/);
    const byUri = await leafFor(key, subB, UNI_A, { dns: [], uri: [`https://${UNI_A}`] });
    rejected(await check(await credential(key, UNI_A, b64(byUri, subB))), 'untrusted_issuer', /outside/);
  });

  it("nor can B sign A's status list", async () => {
    const keyA = await newIssuerKey();
    const leafA = await leafFor(keyA, subA, UNI_A);
    const listKey = await newIssuerKey();
    const forgedList = await leafFor(listKey, subB, UNI_A);
    const honestList = await leafFor(listKey, subA, UNI_A);
    for (const [name, chain] of [
      ['forged', b64(forgedList, subB)],
      ['honest', b64(honestList, subA)],
    ] as const) {
      const uri = `${server.url}/lists/${name}`;
      server.text(
        `/lists/${name}`,
        () => statusListToken({ uri, key: listKey, now: clock.now(), header: { x5c: chain } }),
        { 'content-type': 'application/statuslist+jwt' },
      );
    }
    const status = (name: string) => ({ uri: `${server.url}/lists/${name}`, idx: 5 });
    assert.equal(judged(await check(await credential(keyA, UNI_A, b64(leafA, subA), status('honest')))).verified, true);
    rejected(
      await check(await credential(keyA, UNI_A, b64(leafA, subA), status('forged'))),
      'invalid_status_list',
      /not signed by this issuer: the leaf certificate's name uni-a\.example\.edu is outside/,
    );
  });

  it('a TLS-server certificate, a SHA-1 signature or an unknown critical extension cannot sign a credential', async () => {
    const key = await newIssuerKey();
    const tls = await leafFor(key, subA, UNI_A, { eku: [EXTENDED_KEY_USAGES.serverAuth!] });
    rejected(
      await check(await credential(key, UNI_A, b64(tls, subA))),
      'untrusted_issuer',
      /extended key usage \(serverAuth\) does not allow signing credentials/,
    );
    const sha1 = await leafFor(key, subA, UNI_A, { hash: 'SHA-1' });
    rejected(await check(await credential(key, UNI_A, b64(sha1, subA))), 'untrusted_issuer', /ecdsa-with-SHA1/);
    const critical = await leafFor(key, subA, UNI_A, {
      extensions: [new x509.Extension('1.3.6.1.4.1.55555.1', true, new Uint8Array([5, 0]))],
    });
    rejected(
      await check(await credential(key, UNI_A, b64(critical, subA))),
      'untrusted_issuer',
      /unrecognised critical extension/,
    );
  });
});
