import { randomBytes } from 'node:crypto';
import { CLAIM_CATALOGUE, isAcademicLevel, type ClaimName } from '../domain/claims.ts';
import { loadHolderBuilder } from '../proofs/builders.ts';
import { holderKeyPair, issueSandboxCredential, STUDENT_CREDENTIAL_VCT } from '../proofs/sd-jwt-vc/index.ts';
import { SANDBOX_UNIVERSITIES, sandboxUniversity } from '../proofs/sandbox-universities.ts';
import type { PresentationBuilder, SandboxStudent } from '../proofs/types.ts';
import { CREDENTIAL_FORMATS, type CredentialFormat } from '../domain/credentials.ts';
import { sandboxStatusIndex } from '../proofs/sd-jwt-vc/sandbox-status-list.ts';
import { sandboxStatusListUri } from '../services/sandbox-status-lists.ts';
import { answerOpenid4vp, isOpenid4vpUri, serviceBaseOf } from './openid4vp-wallet.ts';
import { printJson, requireOption, UsageError, type CliContext, type Command } from './command.ts';
import { ApiRequestError, BASE_URL_DEFAULT, serviceBaseUrl } from './api-client.ts';

/**
 * The wallet simulator: holds sandbox credentials (issued on the fly from the published sandbox
 * seeds) and answers sessions through the same public endpoints a real wallet uses, with
 * switches to misbehave.
 */
const STUDENT_OPTIONS = {
  format: { type: 'string' },
  university: { type: 'string' },
  level: { type: 'string' },
  inactive: { type: 'boolean' },
  'expired-credential': { type: 'boolean' },
  tamper: { type: 'boolean' },
  revoked: { type: 'boolean' },
  suspended: { type: 'boolean' },
  'status-index': { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The formats the simulator holds a credential in: no W3C credential (jwt-vc), see src/proofs/builders.ts. */
const SIMULATED_FORMATS = CREDENTIAL_FORMATS.filter((format) => format !== 'jwt-vc');

const STUDENT_HELP = [
  `  --format F              ${SIMULATED_FORMATS.join(' | ')} (default sd-jwt-vc)`,
  `  --university DOMAIN     ${SANDBOX_UNIVERSITIES.map((u) => u.domain).join(' | ')} (default ${SANDBOX_UNIVERSITIES[0].domain})`,
  '  --level LEVEL           undergraduate | postgraduate | doctoral | vocational (default undergraduate)',
  '  --inactive              the student is not active',
  '  --expired-credential    the credential expired yesterday',
  '  --tamper                alter a disclosed value after signing',
  "  --revoked               sd-jwt-vc: the credential is revoked in its university's status list",
  "  --suspended             sd-jwt-vc: the credential is suspended in its university's status list",
].join('\n');

type Values = Record<string, string | boolean | undefined>;

function formatOf(values: Values): CredentialFormat {
  const format = (values.format as string | undefined) ?? 'sd-jwt-vc';
  if (!(SIMULATED_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be one of ${SIMULATED_FORMATS.join(', ')}`);
  return format as CredentialFormat;
}

/**
 * The credential's status entry: an index of its university's sandbox status list, published by
 * the service at `base` (indexes 0–15 are always revoked, 16–31 always suspended).
 */
function statusOf(values: Values, university: string, base: string): SandboxStudent['status'] {
  if (values.revoked && values.suspended) throw new UsageError('give --revoked or --suspended, not both');
  const kind = values.revoked ? 'revoked' : values.suspended ? 'suspended' : 'valid';
  const uri = sandboxStatusListUri(base, university);
  const given = values['status-index'] as string | undefined;
  if (given === undefined) return { uri, idx: sandboxStatusIndex(kind) };
  if (kind !== 'valid') throw new UsageError('give --status-index or --revoked/--suspended, not both');
  if (!/^\d{1,9}$/.test(given)) throw new UsageError('--status-index must be a whole number');
  return { uri, idx: Number(given) };
}

function studentOf(values: Values, now: Date, base: string): SandboxStudent {
  const university = (values.university as string | undefined) ?? SANDBOX_UNIVERSITIES[0].domain;
  if (!sandboxUniversity(university))
    throw new UsageError(
      `--university must be a sandbox university: ${SANDBOX_UNIVERSITIES.map((u) => u.domain).join(', ')}`,
    );
  const level = (values.level as string | undefined) ?? 'undergraduate';
  if (!isAcademicLevel(level))
    throw new UsageError('--level must be undergraduate, postgraduate, doctoral or vocational');
  const day = 24 * 60 * 60 * 1000;
  const validUntil = new Date(now.getTime() + (values['expired-credential'] ? -day : 365 * day));
  validUntil.setUTCHours(0, 0, 0, 0);
  return {
    university,
    active: !values.inactive,
    academicLevel: level,
    validUntil: validUntil.toISOString(),
    holderSeed: `wallet-${randomBytes(8).toString('hex')}`,
    status: statusOf(values, university, base),
  };
}

/**
 * The format's builder. The wallet simulator is a development tool: groth16 proves with
 * devDependencies, and an install without them gets a sentence saying so, not a stack trace.
 */
async function builderFor(format: CredentialFormat): Promise<PresentationBuilder> {
  const entry = await loadHolderBuilder(format);
  if (!entry.available) throw new Error(entry.reason);
  return entry.builder;
}

async function buildBody(
  values: Values,
  ctx: CliContext,
  request: { nonce: string; audience: string; disclose: readonly ClaimName[] },
  base: string,
) {
  const format = formatOf(values);
  if (format !== 'sd-jwt-vc' && (values.revoked || values.suspended || values['status-index'] !== undefined))
    throw new UsageError(
      `--revoked, --suspended and --status-index apply to sd-jwt-vc: ${format} credentials carry no status entry`,
    );
  const builder = await builderFor(format);
  const now = ctx.clock.now();
  const student = studentOf(values, now, base);
  if (format !== 'sd-jwt-vc') delete student.status;
  let presentation: unknown;
  try {
    presentation = await builder.present(student, { ...request, now });
  } finally {
    // The command proves once: nothing the builder keeps warm for another proof holds it open.
    await builder.release?.();
  }
  if (values.tamper) presentation = builder.tamper(presentation);
  return { body: { format, presentation }, status: student.status };
}

function parseQr(qr: string): { sessionId: string; nonce: string } {
  let url: URL;
  try {
    url = new URL(qr);
  } catch {
    throw new UsageError("--qr must be the session's qrPayload, e.g. matricula://verify?session=sess_…&nonce=nonce_…");
  }
  const sessionId = url.searchParams.get('session');
  const nonce = url.searchParams.get('nonce');
  if (url.host !== 'verify' || !sessionId || !nonce)
    throw new UsageError('--qr must be a verify URI with session and nonce parameters');
  return { sessionId, nonce };
}

/** An answer of the service: the usual envelope, read loosely (the simulator reports what it got). */
interface ApiReply {
  status: number;
  json: { data?: Record<string, unknown>; error?: { code?: string; message?: string; reason?: string } } | null;
}

async function call(method: string, url: string, body?: unknown): Promise<ApiReply> {
  let response: Response;
  try {
    response = await fetch(url, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new Error(`cannot reach ${url}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const text = await response.text();
  try {
    return { status: response.status, json: JSON.parse(text) as ApiReply['json'] };
  } catch {
    throw new Error(`${method} ${url} answered ${response.status} with a body that is not JSON`);
  }
}

export const walletPresent: Command = {
  path: ['wallet', 'present'],
  summary: "Answer a session from its qrPayload, as a student's wallet would",
  usage: [
    'matricula wallet present --qr QR_PAYLOAD|OPENID4VP_URI [--base-url URL] [options] [--wrong-nonce] [--decline] [--json]',
    '',
    STUDENT_HELP,
    '  --protocol P            matricula | openid4vp (default: from --qr; an openid4vpUri is answered by OpenID4VP 1.0,',
    '                          as a standard wallet would, with an sd-jwt-vc credential)',
    "  --trust-anchor FILE     OpenID4VP: PEM certificates to trust (default: the service's own, trusted on first use)",
    '  --wrong-nonce           bind the presentation to another nonce',
    '  --decline               refuse consent instead of presenting',
    `  --base-url URL          the service (default: ${BASE_URL_DEFAULT})`,
    '',
    'Prints the outcome; with --json one object {sessionId, status, verified, failureReason,',
    'credentialStatus: {uri, idx}} (sd-jwt-vc: the index `matricula sandbox revoke` takes).',
    'Exit code 0 when verified, 1 otherwise.',
  ].join('\n'),
  options: {
    ...STUDENT_OPTIONS,
    qr: { type: 'string' },
    protocol: { type: 'string' },
    'trust-anchor': { type: 'string' },
    'base-url': { type: 'string' },
    'wrong-nonce': { type: 'boolean' },
    decline: { type: 'boolean' },
  },
  async run(values, _positionals, ctx) {
    const qr = requireOption(values, 'qr');
    const protocol = (values.protocol as string | undefined) ?? (isOpenid4vpUri(qr) ? 'openid4vp' : 'matricula');
    if (protocol !== 'matricula' && protocol !== 'openid4vp')
      throw new UsageError('--protocol must be matricula or openid4vp');
    if (protocol === 'openid4vp') return presentByOpenid4vp(qr, values, ctx);
    const { sessionId, nonce } = parseQr(qr);
    // Before consent is recorded: a format this installation cannot build fails here.
    await builderFor(formatOf(values));
    const base = serviceBaseUrl({ name: 'base-url', value: values['base-url'] }, ctx);
    const session = `${base}/verification/v1/sessions/${encodeURIComponent(sessionId)}`;
    // The credential's entry in its university's status list (sd-jwt-vc), for `matricula sandbox revoke`.
    const presented: { status?: SandboxStudent['status'] } = {};
    const report = (outcome: { status: string; verified: boolean; failureReason: string | null }) => {
      const credentialStatus = presented.status;
      const statusEntry = credentialStatus ? { credentialStatus } : {};
      if (values.json) printJson(ctx, { sessionId, ...outcome, ...statusEntry });
      else
        ctx.stdout(
          `${sessionId}: ${outcome.status}, ${outcome.verified ? 'verified' : `not verified${outcome.failureReason ? ` (${outcome.failureReason})` : ''}`}` +
            (credentialStatus ? ` [status list index ${credentialStatus.idx}]` : ''),
        );
      return outcome.verified ? 0 : 1;
    };
    const fail = (what: string, res: ApiReply) =>
      new ApiRequestError(
        `${what}: HTTP ${res.status} ${res.json?.error?.code ?? ''} ${res.json?.error?.message ?? ''}`.trim(),
        res.status,
        res.json?.error?.code,
      );

    const request = await call('GET', `${session}/request?nonce=${encodeURIComponent(nonce)}`);
    if (request.status !== 200) throw fail('reading the request', request);
    const { audience, requiredClaims } = request.json?.data as { audience: string; requiredClaims: ClaimName[] };

    const consent = await call('POST', `${session}/consent`, {
      nonce,
      decision: values.decline ? 'declined' : 'approved',
    });
    if (consent.status !== 200) throw fail('recording consent', consent);
    if (values.decline) return report({ status: 'declined', verified: false, failureReason: 'declined' });

    const boundNonce = values['wrong-nonce'] ? `nonce_${randomBytes(32).toString('base64url')}` : nonce;
    const built = await buildBody(values, ctx, { nonce: boundNonce, audience, disclose: requiredClaims }, base);
    presented.status = built.status;
    const answer = await call('POST', `${session}/presentation`, { nonce, ...built.body });
    if (answer.status === 200)
      return report(answer.json?.data as { status: string; verified: boolean; failureReason: string | null });
    if (answer.status === 400 && answer.json?.error?.code === 'presentation_rejected') {
      const state = await call('GET', `${session}/request?nonce=${encodeURIComponent(nonce)}`);
      const status = state.status === 200 ? String(state.json?.data?.status) : 'unknown';
      return report({ status, verified: false, failureReason: answer.json.error.reason ?? null });
    }
    throw fail('presenting', answer);
  },
};

/** `wallet present` for an openid4vpUri: answers as a standard OpenID4VP wallet, reports like the other protocol. */
async function presentByOpenid4vp(uri: string, values: Values, ctx: CliContext): Promise<number> {
  if (!isOpenid4vpUri(uri))
    throw new UsageError("--protocol openid4vp needs the session's openid4vpUri as --qr (openid4vp://?client_id=…)");
  if (formatOf(values) !== 'sd-jwt-vc') throw new UsageError('OpenID4VP presents sd-jwt-vc credentials only');
  const now = ctx.clock.now();
  const answer = await answerOpenid4vp({
    uri,
    student: studentOf(values, now, serviceBaseOf(uri)),
    now,
    trustAnchorFile: values['trust-anchor'] as string | undefined,
    decline: Boolean(values.decline),
    wrongNonce: Boolean(values['wrong-nonce']),
    tamper: Boolean(values.tamper),
  });
  if (answer.status !== 200 && answer.status !== 400)
    throw new Error(`the response endpoint answered ${answer.status}: ${answer.body.error_description ?? ''}`);
  // The wallet learns the state, not the result: the public status says what any holder of the session id may know.
  const state = await call(
    'GET',
    `${answer.baseUrl}/verification/v1/sessions/${encodeURIComponent(answer.sessionId)}/status`,
  );
  const status = state.status === 200 ? String(state.json?.data?.status) : 'unknown';
  const verified = state.status === 200 && state.json?.data?.verified === true;
  const outcome = {
    sessionId: answer.sessionId,
    status,
    verified,
    failureReason:
      answer.status === 400 ? (answer.body.reason ?? answer.body.error ?? null) : values.decline ? 'declined' : null,
    failureMessage: answer.status === 400 ? (answer.body.error_description ?? null) : null,
  };
  if (values.json) printJson(ctx, outcome);
  else
    ctx.stdout(
      `${outcome.sessionId}: ${status}, ${verified ? 'verified' : `not verified${outcome.failureReason ? ` (${outcome.failureReason})` : ''}`}`,
    );
  return verified ? 0 : 1;
}

export const walletPresentation: Command = {
  path: ['wallet', 'presentation'],
  summary: 'Print a body for POST /verification/v1/verify: {"format", "presentation", "nonce", "audience"}',
  usage: [
    'matricula wallet presentation --format F [--nonce NONCE] [--audience URL] [options] [--claims a,b] [--json]',
    '',
    STUDENT_HELP,
    '  --nonce NONCE           bind to this nonce (default: a fresh random one; /verify spends each nonce once)',
    `  --audience URL          bind to this audience (default: ${BASE_URL_DEFAULT})`,
    `  --claims LIST           claims to disclose (default: all of ${CLAIM_CATALOGUE.join(', ')})`,
    '',
    'The body verifies as printed: without requiredClaims, /verify judges it on what it discloses.',
  ].join('\n'),
  options: { ...STUDENT_OPTIONS, nonce: { type: 'string' }, audience: { type: 'string' }, claims: { type: 'string' } },
  async run(values, _positionals, ctx) {
    if (values.format === undefined) throw new UsageError('--format is required');
    if (values.nonce === '') throw new UsageError('--nonce must not be empty');
    const nonce = (values.nonce as string | undefined) ?? `nonce_${randomBytes(32).toString('base64url')}`;
    const audience = serviceBaseUrl({ name: 'audience', value: values.audience }, ctx);
    const claims =
      values.claims === undefined
        ? [...CLAIM_CATALOGUE]
        : String(values.claims)
            .split(',')
            .map((c) => c.trim());
    const unknown = claims.filter((c) => !(CLAIM_CATALOGUE as readonly string[]).includes(c));
    if (unknown.length)
      throw new UsageError(`unknown claim ${unknown.join(', ')}; the catalogue is ${CLAIM_CATALOGUE.join(', ')}`);
    const { body } = await buildBody(values, ctx, { nonce, audience, disclose: claims as ClaimName[] }, audience);
    // Everything /verify needs to check the binding, so that the body is accepted as printed.
    ctx.stdout(JSON.stringify({ ...body, nonce, audience }));
    return 0;
  },
};

/** Formats whose credential can be exported for another wallet: only SD-JWT VC is a standard one can import. */
const EXPORTABLE_FORMATS: readonly CredentialFormat[] = ['sd-jwt-vc'];

export const walletCredential: Command = {
  path: ['wallet', 'credential'],
  summary: 'Print a sandbox credential and its holder key, for another wallet or library to import',
  usage: [
    'matricula wallet credential [--format sd-jwt-vc] [--university D] [--level L] [--inactive] [--expired-credential]',
    '                           [--revoked | --suspended | --status-index N] [--base-url URL] [--json]',
    '',
    STUDENT_HELP.split('\n')
      .filter((line) => !line.includes('--tamper') && !line.includes('--format'))
      .join('\n'),
    '  --format F              sd-jwt-vc (the only format another wallet can import)',
    '',
    'The credential is a compact SD-JWT VC (vct StudentCredential, every catalogue claim selectively',
    "disclosable) issued now by the sandbox university's published key; cnf.jwk is the holder's public",
    'key. With --json one object {format, vct, university, credential, holderPrivateJwk, holderPublicJwk,',
    'claims, expiresAt, status}. Sandbox credentials are trusted by sandbox sessions only.',
    "status is the credential's entry in its university's status list, served by the service at",
    `--base-url (default: ${BASE_URL_DEFAULT}) under /sandbox/status-lists/.`,
  ].join('\n'),
  options: {
    format: STUDENT_OPTIONS.format,
    university: STUDENT_OPTIONS.university,
    level: STUDENT_OPTIONS.level,
    inactive: STUDENT_OPTIONS.inactive,
    'expired-credential': STUDENT_OPTIONS['expired-credential'],
    revoked: STUDENT_OPTIONS.revoked,
    suspended: STUDENT_OPTIONS.suspended,
    'status-index': STUDENT_OPTIONS['status-index'],
    'base-url': { type: 'string' },
    json: STUDENT_OPTIONS.json,
  },
  async run(values, _positionals, ctx) {
    const format = formatOf(values);
    if (!EXPORTABLE_FORMATS.includes(format))
      throw new UsageError(`--format ${format} cannot be exported; use ${EXPORTABLE_FORMATS.join(', ')}`);
    const now = ctx.clock.now();
    const base = serviceBaseUrl({ name: 'base-url', value: values['base-url'] }, ctx);
    const student = studentOf(values, now, base);
    const credential = await issueSandboxCredential(student, now);
    const holder = holderKeyPair(student.holderSeed);
    const exported = {
      format,
      vct: STUDENT_CREDENTIAL_VCT,
      university: student.university,
      credential,
      holderPrivateJwk: { ...holder.privateJwk, alg: holder.alg },
      holderPublicJwk: { ...holder.publicJwk, alg: holder.alg },
      claims: {
        is_active_student: student.active,
        university_domain: student.university,
        academic_level: student.academicLevel,
        valid_until: student.validUntil,
      },
      expiresAt: student.validUntil,
      status: student.status,
    };
    if (values.json) printJson(ctx, exported);
    else
      ctx.stdout(
        [
          `# ${STUDENT_CREDENTIAL_VCT} (${format}) of ${student.university}, valid until ${student.validUntil}`,
          credential,
          '# holder private key (JWK, ES256)',
          JSON.stringify(exported.holderPrivateJwk),
        ].join('\n'),
      );
    return 0;
  },
};
