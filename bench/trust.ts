/**
 * What issuer trust and revocation cost per sd-jwt-vc verification, beside the baseline measured in
 * the same run: a raw-key credential without a status entry.
 *
 *   node --import tsx bench/trust.ts [--iterations 300] [--warmup 20] [--json]
 *
 * Contenders: the baseline; the same with a status list of 16 384 two-bit entries (the sandbox
 * size) and of 1 048 576 one-bit entries (every presentation verifies the cached token's signature
 * and inflates its list); an x5c chain (leaf + intermediate) to an anchor; issuer metadata keys
 * (cached). Fetching is out of the picture: publications answer from memory, as a warm cache does.
 * Contenders run one after the other on each iteration, order rotating, so that noise on this
 * shared machine hits them alike. Figures are printed, never asserted; with --json the last line is
 * one JSON object of medians (ms) and ratios to the baseline.
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { IssuerPublications, TrustedIssuer, TrustRegistry } from '../src/domain/credentials.ts';
import { sdJwtVcVerifier } from '../src/proofs/sd-jwt-vc/index.ts';
import type { PresentationContext } from '../src/proofs/types.ts';
import {
  CA_USAGE,
  certificate,
  newIssuerKey,
  pem,
  presentation,
  SIGNING_USAGE,
  statusListToken,
  x5c,
} from '../test/support/university.ts';

const { values } = parseArgs({
  options: { iterations: { type: 'string' }, warmup: { type: 'string' }, json: { type: 'boolean' } },
});
const ITERATIONS = Number(values.iterations ?? 300);
const WARMUP = Number(values.warmup ?? 20);
const NOW = new Date();
const NONCE = 'nonce_bench-trust-1';
const AUDIENCE = 'https://verify.example';
const CONTEXT: PresentationContext = {
  nonce: NONCE,
  audience: AUDIENCE,
  now: NOW,
  environment: 'live',
  requiredClaims: ['is_active_student'],
};

const key = await newIssuerKey();
const rootKey = await newIssuerKey();
const root = await certificate(rootKey, 'Bench Root', NOW, { ca: true, keyUsage: CA_USAGE });
const intermediateKey = await newIssuerKey();
const intermediate = await certificate(
  intermediateKey,
  'Bench Issuing CA',
  NOW,
  { ca: true, pathLength: 0, keyUsage: CA_USAGE },
  { key: rootKey, cert: root },
);
const leaf = await certificate(
  key,
  'Bench issuer',
  NOW,
  { dns: 'bench.example.edu', keyUsage: SIGNING_USAGE },
  { key: intermediateKey, cert: intermediate },
);

const small = 'https://lists.bench.example.edu/small';
const large = 'https://lists.bench.example.edu/large';
const tokens = new Map([
  [small, statusListToken({ uri: small, key, now: NOW, size: 16_384, bits: 2, statuses: { 7: 1 } })],
  [large, statusListToken({ uri: large, key, now: NOW, size: 1_048_576, bits: 1, statuses: { 7: 1 } })],
]);
const publications: IssuerPublications = {
  statusListPolicy: 'fail_closed',
  metadataKeys: async () => ({ ok: true, value: [{ ...key.publicJwk, kid: 'k1' }] }),
  statusListToken: async (uri) => ({ ok: true, value: tokens.get(uri)! }),
};
const issuers: TrustedIssuer[] = [
  {
    id: 'iss_bench',
    name: 'Bench University',
    domain: 'bench.example.edu',
    country: 'NL',
    environment: 'live',
    keys: { sdJwtVc: key.publicJwk },
    anchors: [pem(root)],
    metadataIssuer: 'https://bench.example.edu/issuer',
  },
];
const registry: TrustRegistry = { issuers: async () => issuers, publications };

const base = { key, domain: 'bench.example.edu', now: NOW };
const iss = 'https://bench.example.edu';
const contenders: Record<string, string> = {
  baseline: await presentation({ ...base, iss }, NONCE, AUDIENCE),
  status_16k: await presentation({ ...base, iss, status: { uri: small, idx: 9 } }, NONCE, AUDIENCE),
  status_1m: await presentation({ ...base, iss, status: { uri: large, idx: 9 } }, NONCE, AUDIENCE),
  x509_chain: await presentation({ ...base, iss, header: { x5c: x5c(leaf, intermediate) } }, NONCE, AUDIENCE),
  metadata: await presentation(
    { ...base, iss: 'https://bench.example.edu/issuer', header: { kid: 'k1' } },
    NONCE,
    AUDIENCE,
  ),
};

const names = Object.keys(contenders);
for (const name of names) {
  const check = await sdJwtVcVerifier.verify(contenders[name], CONTEXT, registry);
  if (!check.ok || check.presentation.revocation) throw new Error(`${name} does not verify: ${JSON.stringify(check)}`);
}
const samples = new Map(names.map((name) => [name, [] as number[]]));
for (let i = 0; i < WARMUP + ITERATIONS; i++) {
  for (let j = 0; j < names.length; j++) {
    const name = names[(i + j) % names.length]!;
    const started = performance.now();
    const check = await sdJwtVcVerifier.verify(contenders[name], CONTEXT, registry);
    const ms = performance.now() - started;
    if (!check.ok) throw new Error(`${name} failed in the loop`);
    if (i >= WARMUP) samples.get(name)!.push(ms);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)]!;
const baseline = median(samples.get('baseline')!);
console.log(
  `sd-jwt-vc verification, ${ITERATIONS} iterations each (load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores)`,
);
const result: Record<string, number> = {};
for (const name of names) {
  const xs = samples.get(name)!;
  result[`${name}_median_ms`] = Number(median(xs).toFixed(3));
  result[`${name}_vs_baseline`] = Number((median(xs) / baseline).toFixed(2));
  console.log(
    `  ${name.padEnd(12)} median ${median(xs).toFixed(3)} ms  p99 ${p99(xs).toFixed(3)} ms  ×${(median(xs) / baseline).toFixed(2)} baseline`,
  );
}
if (values.json) console.log(JSON.stringify({ iterations: ITERATIONS, load_average: loadavg()[0], ...result }));
