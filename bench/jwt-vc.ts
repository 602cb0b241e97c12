/**
 * `jwt_vc_json` verify time next to SD-JWT VC's, through the service verifiers of their submission
 * formats (`jwt-vc` and `sd-jwt-vc`), in one run, with
 * the bare library call beside each: did-jwt-vc (verifyPresentation + verifyCredential over a
 * did:jwk resolver) for the W3C credential, @sd-jwt/sd-jwt-vc for the SD-JWT VC.
 *
 *   node --import tsx bench/jwt-vc.ts [--n 200] [--warmup 10] [--json]
 *
 * Goal (issue 29): jwt_vc_json within 2× SD-JWT VC. Presentations are built once and reused
 * round-robin; every contender first accepts each and rejects a tampered one, untimed. In the
 * timed loop the contenders run one after the other in rotating order. With --json the last line
 * is one JSON object: `median_ms` and `p99_ms` per format, `library_median_ms`, and
 * `jwt_vc_json_vs_sd_jwt_vc` (the ratio of our two medians). Figures are printed, never asserted.
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ES256, digest } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { verifyCredential, verifyPresentation } from 'did-jwt-vc';
import { Resolver, type DIDResolutionResult } from 'did-resolver';
import { EUROPEAN_STUDENT_CARD_PROFILE, STUDENT_CREDENTIAL_PROFILE } from '../src/domain/built-in-profiles.ts';
import type { ClaimName } from '../src/domain/claims.ts';
import type { TrustedIssuer, TrustRegistry } from '../src/domain/credentials.ts';
import { createVerifiers } from '../src/proofs/formats.ts';
import { sandboxIssuers } from '../src/proofs/issuer-definitions.ts';
import { sandboxUniversityKeyPair } from '../src/proofs/sd-jwt-vc/index.ts';
import type { PresentationContext } from '../src/proofs/types.ts';
import { BUILDERS } from '../test/support/builders.ts';
import { newIssuerKey } from '../test/support/university.ts';
import { didJwk, europeanStudentCard, identity, presentJwtVc } from '../test/support/w3c.ts';

const NOW = new Date();
const UNIVERSITY = 'sandbox-state.example'; // ES256 for sd-jwt-vc, as in bench/proofs.ts
const CLAIMS: readonly ClaimName[] = ['is_active_student', 'university_domain', 'academic_level', 'valid_until'];
const CONTEXT: PresentationContext = {
  nonce: 'nonce_bench-jwt-vc-1',
  audience: 'https://verify.example',
  now: NOW,
  environment: 'sandbox',
  requiredClaims: CLAIMS,
  profiles: [STUDENT_CREDENTIAL_PROFILE, EUROPEAN_STUDENT_CARD_PROFILE],
};
const PRESENTATIONS = 16;

const ISSUERS: TrustedIssuer[] = sandboxIssuers().map((issuer, i) => ({ ...issuer, id: `iss_bench${i}` }));
const REGISTRY: TrustRegistry = {
  issuers: async (environment) => ISSUERS.filter((i) => i.environment === environment && i.keys.sdJwtVc),
};

type Call = () => Promise<boolean>;
interface Contender {
  label: string;
  prepare(presentation: string): Call;
}

const { values: ARGS } = parseArgs({
  options: {
    n: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '10' },
    json: { type: 'boolean', default: false },
  },
});

function positive(name: 'n' | 'warmup'): number {
  const value = Number(ARGS[name]);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer`);
  return value;
}

/** A did:jwk resolver for did-resolver: the DID document is the key itself. */
const resolver = new Resolver({
  jwk: async (did): Promise<DIDResolutionResult> => {
    const jwk = JSON.parse(Buffer.from(did.slice('did:jwk:'.length), 'base64url').toString()) as { kty: string };
    const id = `${did}#0`;
    return {
      didResolutionMetadata: { contentType: 'application/did+json' },
      didDocumentMetadata: {},
      didDocument: {
        id: did,
        verificationMethod: [{ id, type: 'JsonWebKey2020', controller: did, publicKeyJwk: jwk }],
        assertionMethod: [id],
        authentication: [id],
      },
    };
  },
});

function tamper(presentation: string): string {
  // Flip one character of the signature of the outermost JWT (KB-JWT or VP JWT).
  const last = presentation.length - 5;
  return presentation.slice(0, last) + (presentation[last] === 'A' ? 'B' : 'A') + presentation.slice(last + 1);
}

async function main(): Promise<void> {
  const n = positive('n');
  const warmup = positive('warmup');
  const verifiers = createVerifiers();
  const ours = (format: 'sd-jwt-vc' | 'jwt-vc', label: string): Contender => ({
    label,
    prepare: (p) => async () => (await verifiers[format].verify(p, CONTEXT, REGISTRY)).ok,
  });

  // SD-JWT VC: the sandbox builder, as bench/proofs.ts.
  const sdJwt: string[] = [];
  for (let i = 0; i < PRESENTATIONS; i++)
    sdJwt.push(
      (await BUILDERS['sd-jwt-vc'].present(
        {
          university: UNIVERSITY,
          active: true,
          academicLevel: 'postgraduate',
          validUntil: new Date(NOW.getTime() + 200 * 86_400_000).toISOString(),
          holderSeed: `bench-student-${i}`,
        },
        { nonce: CONTEXT.nonce, audience: CONTEXT.audience, now: NOW, disclose: CLAIMS },
      )) as string,
    );
  const issuerKey = sandboxUniversityKeyPair(UNIVERSITY)!;
  const sdLibrary = new SDJwtVcInstance({
    hasher: digest,
    verifier: await ES256.getVerifier(issuerKey.publicJwk),
    kbVerifier: async (data, signature, payload) => (await ES256.getVerifier(payload.cnf!.jwk))(data, signature),
  });
  const sdOptions = { keyBindingNonce: CONTEXT.nonce, currentDate: Math.floor(NOW.getTime() / 1000) };

  // jwt_vc_json: European Student Cards by the same university (its key as a did:jwk), did-jwt-vc.
  const issuer = identity({ privateJwk: issuerKey.privateJwk, publicJwk: issuerKey.publicJwk, keys: undefined! });
  const w3c: string[] = [];
  for (let i = 0; i < PRESENTATIONS; i++) {
    const holderKey = await newIssuerKey();
    const credential = await europeanStudentCard(issuer, didJwk(holderKey.publicJwk), NOW, UNIVERSITY);
    w3c.push(
      await presentJwtVc(credential, identity(holderKey), { nonce: CONTEXT.nonce, aud: CONTEXT.audience, now: NOW }),
    );
  }

  const rows: Array<{ name: string; presentations: string[]; ours: Contender; library: Contender }> = [
    {
      name: 'sd-jwt-vc',
      presentations: sdJwt,
      ours: ours('sd-jwt-vc', "verifiers['sd-jwt-vc'] (SD-JWT VC)"),
      library: {
        label: 'SDJwtVcInstance.verify',
        prepare: (p) => async () => {
          try {
            const result = await sdLibrary.verify(p, sdOptions);
            return result.kb !== undefined;
          } catch {
            return false;
          }
        },
      },
    },
    {
      name: 'jwt_vc_json',
      presentations: w3c,
      ours: ours('jwt-vc', "verifiers['jwt-vc'] (jwt_vc_json)"),
      library: {
        label: 'did-jwt-vc verifyPresentation + verifyCredential',
        prepare: (p) => async () => {
          try {
            const vp = await verifyPresentation(p, resolver, { challenge: CONTEXT.nonce, domain: CONTEXT.audience });
            const [vc] = vp.verifiablePresentation.verifiableCredential ?? [];
            await verifyCredential((vc as unknown as { proof: { jwt: string } }).proof.jwt, resolver);
            return true;
          } catch {
            return false;
          }
        },
      },
    },
  ];

  console.log(
    `node ${process.version}, ${cpus().length} cpus, load ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const row of rows)
    for (const c of [row.ours, row.library]) {
      for (const p of row.presentations)
        if (!(await c.prepare(p)())) throw new Error(`${row.name}: ${c.label} rejects a valid presentation`);
      if (await c.prepare(tamper(row.presentations[0]!))())
        throw new Error(`${row.name}: ${c.label} accepts a tampered presentation`);
    }

  const contenders = rows.flatMap((row) => [row.ours, row.library]);
  const calls = rows.flatMap((row) => [row.ours, row.library].map((c) => row.presentations.map((p) => c.prepare(p))));
  for (let i = 0; i < warmup; i++) for (const byPresentation of calls) await byPresentation[i % PRESENTATIONS]!();
  const samples = contenders.map(() => ({ ms: new Float64Array(n), failures: 0 }));
  for (let i = 0; i < n; i++)
    for (let j = 0; j < contenders.length; j++) {
      const c = (i + j) % contenders.length;
      const start = performance.now();
      const ok = await calls[c]![i % PRESENTATIONS]!();
      samples[c]!.ms[i] = performance.now() - start;
      if (!ok) samples[c]!.failures++;
    }
  const stat = (s: Float64Array, p: number) => {
    const sorted = Float64Array.from(s).sort();
    return sorted.length === 0 ? NaN : sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
  };
  const fmt = (ms: number) => ms.toFixed(3).padStart(10);
  console.log(
    `\n${'format'.padEnd(13)}${'n'.padStart(5)}${'our med'.padStart(10)}${'our p99'.padStart(10)}${'lib med'.padStart(10)}   ours vs library`,
  );
  const figures: Record<string, { median: number; p99: number; library: number }> = {};
  let failures = 0;
  rows.forEach((row, r) => {
    const [o, l] = [samples[2 * r]!, samples[2 * r + 1]!];
    failures += o.failures + l.failures;
    figures[row.name] = { median: stat(o.ms, 50), p99: stat(o.ms, 99), library: stat(l.ms, 50) };
    const f = figures[row.name]!;
    console.log(
      `${row.name.padEnd(13)}${String(n).padStart(5)}${fmt(f.median)}${fmt(f.p99)}${fmt(f.library)}   ${row.ours.label} vs ${row.library.label}`,
    );
  });
  const ratio = figures.jwt_vc_json!.median / figures['sd-jwt-vc']!.median;
  console.log(`\njwt_vc_json ÷ sd-jwt-vc (our medians): ${ratio.toFixed(2)} (goal ≤ 2)`);
  if (failures > 0) process.exitCode = 1;
  if (ARGS.json) {
    const pick = (k: 'median' | 'p99' | 'library') =>
      Object.fromEntries(Object.entries(figures).map(([name, f]) => [name, Number(f[k].toFixed(3))]));
    console.log(
      JSON.stringify({
        median_ms: pick('median'),
        p99_ms: pick('p99'),
        library_median_ms: pick('library'),
        jwt_vc_json_vs_sd_jwt_vc: Number(ratio.toFixed(3)),
      }),
    );
  }
}

await main();
