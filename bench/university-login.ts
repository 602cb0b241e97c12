/**
 * University login: what verifying one SAML response costs (our checks before node-saml, node-saml's
 * signature, audience and times, our checks after), beside an SD-JWT VC verification measured in
 * the same run; and the portal's IdP search over a registry of many identity providers.
 *
 *   node --import tsx bench/university-login.ts [--iterations 300] [--warmup 20] [--idps 5000] [--json]
 *
 * The responses come from samlify in IdP mode (a peer we did not write), signed RSA-SHA256, one per
 * iteration (each assertion id is new, as in life). No database and no HTTP: the verification
 * itself. The search runs over a synthetic registry of --idps providers with queries of 1 to 3
 * words. Figures are printed, never asserted; with --json the last line is one JSON object (ms).
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { TestClock } from '../src/domain/clock.ts';
import type { IdentityProvider } from '../src/domain/identity-providers.ts';
import { indexProviders, searchProviders } from '../src/domain/provider-search.ts';
import { sdJwtVcVerifier } from '../src/proofs/sd-jwt-vc/index.ts';
import type { PresentationContext, TrustRegistry } from '../src/proofs/types.ts';
import { parseIdpMetadata } from '../src/services/sso/saml/idp-metadata.ts';
import { readResponse, verifyResponse } from '../src/services/sso/saml/response.ts';
import { spEndpoints, spMetadataXml } from '../src/services/sso/saml/service-provider.ts';
import { generateSamlKeyPair } from '../src/services/sso/saml/sp-keys.ts';
import { startTestIdp } from '../test/support/saml-idp.ts';
import { newIssuerKey, presentation } from '../test/support/university.ts';
import { median, percentile } from './support.ts';

const { values } = parseArgs({
  options: {
    iterations: { type: 'string' },
    warmup: { type: 'string' },
    idps: { type: 'string' },
    json: { type: 'boolean' },
  },
});
const ITERATIONS = Number(values.iterations ?? 300);
const WARMUP = Number(values.warmup ?? 20);
const IDPS = Number(values.idps ?? 5000);
const BASE_URL = 'https://verify.bench.example';
const NOW = new Date();

// SAML: our SP, a samlify IdP, and one signed response per iteration for one outstanding request.
const keys = { ...(await generateSamlKeyPair('bench SP', NOW)), source: 'generated' as const };
const idpServer = await startTestIdp(spMetadataXml({ baseUrl: BASE_URL, keys, displayName: 'Bench' }));
const parsed = parseIdpMetadata(idpServer.metadataXml);
if (!parsed.ok) throw new Error(parsed.problem);
const meta = parsed.providers[0]!;
const idp: IdentityProvider = {
  id: 'idp_bench',
  environment: 'live',
  protocol: 'saml',
  entityId: meta.entityId,
  name: meta.name,
  domain: meta.scopes[0]!,
  country: 'NL',
  scopes: meta.scopes,
  saml: { ssoUrl: meta.ssoUrl, certificates: meta.certificates },
  federation: null,
  createdAt: NOW.toISOString(),
};
const request = { id: '_bench-request', relayState: 'sess_bench' };
const responses: string[] = [];
for (let i = 0; i < ITERATIONS + WARMUP; i++) responses.push(await idpServer.respond(request));
await idpServer.close();
const clock = new TestClock(new Date());
const { acsUrl } = spEndpoints(BASE_URL);

async function verifySaml(response: string): Promise<void> {
  const read = await readResponse(response, { maxBytes: 262_144, acsUrl, keys });
  if (!read.ok) throw new Error(read.message);
  const verified = await verifyResponse(read, { baseUrl: BASE_URL, keys, idp, clock, requestId: request.id });
  if (!verified.ok) throw new Error(verified.message);
}

// SD-JWT VC, the baseline: a raw-key credential without a status entry (as bench/trust.ts).
const key = await newIssuerKey();
const CONTEXT: PresentationContext = {
  nonce: 'nonce_bench-login',
  audience: BASE_URL,
  now: NOW,
  environment: 'live',
  requiredClaims: ['is_active_student'],
};
const registry: TrustRegistry = {
  issuers: async () => [
    {
      id: 'iss_bench',
      name: 'Bench',
      domain: 'bench.example.edu',
      country: 'NL',
      environment: 'live',
      keys: { sdJwtVc: key.publicJwk },
    },
  ],
};
const sdJwt = await presentation(
  { key, domain: 'bench.example.edu', now: NOW, iss: 'https://bench.example.edu' },
  CONTEXT.nonce,
  BASE_URL,
);

const saml: number[] = [];
const sdjwt: number[] = [];
for (let i = 0; i < ITERATIONS + WARMUP; i++) {
  // Alternate which goes first, so that noise on this shared machine hits both alike.
  const order = i % 2 === 0 ? ['saml', 'sdjwt'] : ['sdjwt', 'saml'];
  for (const which of order) {
    const started = performance.now();
    if (which === 'saml') await verifySaml(responses[i]!);
    else if (!(await sdJwtVcVerifier.verify(sdJwt, CONTEXT, registry)).ok) throw new Error('sd-jwt-vc rejected');
    const ms = performance.now() - started;
    if (i >= WARMUP) (which === 'saml' ? saml : sdjwt).push(ms);
  }
}

// The portal's search over a synthetic registry.
const WORDS = ['Universiteit', 'University', 'Universidad', 'Hochschule', 'Institute', 'College', 'Academy'];
const CITIES = ['Amsterdam', 'Leiden', 'Madrid', 'Berlin', 'Zürich', 'Kraków', 'Lyon', 'Porto', 'Turku', 'Gent'];
const COUNTRIES = ['NL', 'ES', 'DE', 'CH', 'PL', 'FR', 'PT', 'FI', 'BE', 'SE'];
const providers = Array.from({ length: IDPS }, (_, i) => ({
  id: `idp_${i}`,
  name: `${WORDS[i % WORDS.length]} of ${CITIES[i % CITIES.length]} ${i}`,
  domain: `u${i}.${CITIES[i % CITIES.length]!.toLowerCase()}.example`,
  country: COUNTRIES[i % COUNTRIES.length]!,
}));
const indexStarted = performance.now();
const index = indexProviders(providers);
const indexMs = performance.now() - indexStarted;
const QUERIES = [
  'a',
  'univ',
  'leiden',
  'zurich',
  'of kra',
  'u4711',
  'hochschule berlin',
  'nl',
  'college porto 9',
  'zz',
];
const search: number[] = [];
for (let i = 0; i < 2000; i++) {
  const started = performance.now();
  searchProviders(index, QUERIES[i % QUERIES.length]!, 20);
  if (i >= 100) search.push(performance.now() - started);
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const result = {
  saml_verify_median_ms: Number(median(saml).toFixed(3)),
  saml_verify_p99_ms: Number(percentile(sorted(saml), 99).toFixed(3)),
  sd_jwt_vc_verify_median_ms: Number(median(sdjwt).toFixed(3)),
  saml_vs_sd_jwt_vc: Number((median(saml) / median(sdjwt)).toFixed(2)),
  idps: IDPS,
  search_index_build_ms: Number(indexMs.toFixed(1)),
  search_median_ms: Number(median(search).toFixed(3)),
  search_p99_ms: Number(percentile(sorted(search), 99).toFixed(3)),
};
console.log(`SAML response verify: median ${result.saml_verify_median_ms} ms, p99 ${result.saml_verify_p99_ms} ms`);
console.log(
  `SD-JWT VC verify:     median ${result.sd_jwt_vc_verify_median_ms} ms  (SAML ×${result.saml_vs_sd_jwt_vc})`,
);
console.log(
  `IdP search over ${IDPS}: index ${result.search_index_build_ms} ms, median ${result.search_median_ms} ms, p99 ${result.search_p99_ms} ms`,
);
if (values.json) console.log(JSON.stringify(result));
