import { randomBytes } from 'node:crypto';
import { CLAIM_CATALOGUE, isAcademicLevel, type ClaimName } from '../domain/claims.ts';
import { loadHolderBuilder } from '../proofs/builders.ts';
import { SANDBOX_UNIVERSITIES, sandboxUniversity } from '../proofs/sandbox-universities.ts';
import type { PresentationBuilder, SandboxStudent } from '../proofs/types.ts';
import { CREDENTIAL_FORMATS, type CredentialFormat } from '../domain/credentials.ts';
import { printJson, requireOption, UsageError, type CliContext, type Command } from './command.ts';

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
  json: { type: 'boolean' },
} as const;

const STUDENT_HELP = [
  `  --format F              ${CREDENTIAL_FORMATS.join(' | ')} (default sd-jwt-vc)`,
  `  --university DOMAIN     ${SANDBOX_UNIVERSITIES.map((u) => u.domain).join(' | ')} (default ${SANDBOX_UNIVERSITIES[0].domain})`,
  '  --level LEVEL           undergraduate | postgraduate | doctoral | vocational (default undergraduate)',
  '  --inactive              the student is not active',
  '  --expired-credential    the credential expired yesterday',
  '  --tamper                alter a disclosed value after signing',
].join('\n');

type Values = Record<string, string | boolean | undefined>;

function formatOf(values: Values): CredentialFormat {
  const format = (values.format as string | undefined) ?? 'sd-jwt-vc';
  if (!(CREDENTIAL_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be one of ${CREDENTIAL_FORMATS.join(', ')}`);
  return format as CredentialFormat;
}

function studentOf(values: Values, now: Date): SandboxStudent {
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
) {
  const format = formatOf(values);
  const builder = await builderFor(format);
  const now = ctx.clock.now();
  let presentation = await builder.present(studentOf(values, now), { ...request, now });
  if (values.tamper) presentation = builder.tamper(presentation);
  return { format, presentation };
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
    'matricula wallet present --qr QR_PAYLOAD [--base-url URL] [options] [--wrong-nonce] [--decline] [--json]',
    '',
    STUDENT_HELP,
    '  --wrong-nonce           bind the presentation to another nonce',
    '  --decline               refuse consent instead of presenting',
    '  --base-url URL          the service (default: BASE_URL, else http://localhost:8080)',
    '',
    'Prints the outcome; with --json one object {sessionId, status, verified, failureReason}.',
    'Exit code 0 when verified, 1 otherwise.',
  ].join('\n'),
  options: {
    ...STUDENT_OPTIONS,
    qr: { type: 'string' },
    'base-url': { type: 'string' },
    'wrong-nonce': { type: 'boolean' },
    decline: { type: 'boolean' },
  },
  async run(values, _positionals, ctx) {
    const { sessionId, nonce } = parseQr(requireOption(values, 'qr'));
    // Before consent is recorded: a format this installation cannot build fails here.
    await builderFor(formatOf(values));
    const base = ((values['base-url'] as string | undefined) ?? ctx.env.BASE_URL ?? 'http://localhost:8080').replace(
      /\/+$/,
      '',
    );
    const session = `${base}/verification/v1/sessions/${encodeURIComponent(sessionId)}`;
    const report = (outcome: { status: string; verified: boolean; failureReason: string | null }) => {
      if (values.json) printJson(ctx, { sessionId, ...outcome });
      else
        ctx.stdout(
          `${sessionId}: ${outcome.status}, ${outcome.verified ? 'verified' : `not verified${outcome.failureReason ? ` (${outcome.failureReason})` : ''}`}`,
        );
      return outcome.verified ? 0 : 1;
    };
    const fail = (what: string, res: ApiReply) =>
      new Error(`${what}: HTTP ${res.status} ${res.json?.error?.code ?? ''} ${res.json?.error?.message ?? ''}`.trim());

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
    const body = await buildBody(values, ctx, { nonce: boundNonce, audience, disclose: requiredClaims });
    const answer = await call('POST', `${session}/presentation`, { nonce, ...body });
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

export const walletPresentation: Command = {
  path: ['wallet', 'presentation'],
  summary: 'Print a body for POST /verification/v1/verify: {"format", "presentation"}',
  usage: [
    'matricula wallet presentation --format F --nonce NONCE [--audience URL] [options] [--claims a,b] [--json]',
    '',
    STUDENT_HELP,
    '  --audience URL          bind to this audience (default: BASE_URL, else http://localhost:8080)',
    `  --claims LIST           claims to disclose (default: all of ${CLAIM_CATALOGUE.join(', ')})`,
  ].join('\n'),
  options: { ...STUDENT_OPTIONS, nonce: { type: 'string' }, audience: { type: 'string' }, claims: { type: 'string' } },
  async run(values, _positionals, ctx) {
    if (values.format === undefined) throw new UsageError('--format is required');
    const nonce = requireOption(values, 'nonce');
    const audience = ((values.audience as string | undefined) ?? ctx.env.BASE_URL ?? 'http://localhost:8080').replace(
      /\/+$/,
      '',
    );
    const claims =
      values.claims === undefined
        ? [...CLAIM_CATALOGUE]
        : String(values.claims)
            .split(',')
            .map((c) => c.trim());
    const unknown = claims.filter((c) => !(CLAIM_CATALOGUE as readonly string[]).includes(c));
    if (unknown.length)
      throw new UsageError(`unknown claim ${unknown.join(', ')}; the catalogue is ${CLAIM_CATALOGUE.join(', ')}`);
    ctx.stdout(JSON.stringify(await buildBody(values, ctx, { nonce, audience, disclose: claims as ClaimName[] })));
    return 0;
  },
};
