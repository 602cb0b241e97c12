import { EVENT_TYPES, isEventType, type EventEnvelope, type EventType } from '../domain/events.ts';
import { newSigningSecret } from '../webhooks/secrets.ts';
import { checkTargetUrlShape, createGuardedDispatcher } from '../outbound/ssrf.ts';
import { API_OPTIONS, API_OPTIONS_HELP, apiSettings, createApiClient } from './api-client.ts';
import { printJson, requireOption, UsageError, type CliContext, type Command } from './command.ts';
import { EventFollower, forwardEvent, PollLoop } from './event-follower.ts';

/**
 * `matricula listen`, `matricula events tail` and `matricula webhooks test`: the integrator's
 * tools over the HTTP API (no database access). Every request, to the service and to the local
 * URL, goes through the SSRF guard's dispatcher; local and private addresses are what these tools
 * are for, so they are allowed (cloud metadata addresses still are not).
 */

type Values = Record<string, string | boolean | undefined>;

const FOLLOW_OPTIONS = {
  ...API_OPTIONS,
  app: { type: 'string' },
  events: { type: 'string' },
  'poll-interval': { type: 'string' },
} as const;

const FOLLOW_HELP = [
  '  --app APP               only the events of this application (app_…)',
  `  --events A,B            only these events: ${EVENT_TYPES.join(', ')}`,
  '  --poll-interval MS      how often to ask for new events (default 2000)',
  API_OPTIONS_HELP,
].join('\n');

function eventsOf(values: Values): EventType[] | undefined {
  const raw = values.events as string | undefined;
  if (raw === undefined) return undefined;
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !isEventType(name));
  if (names.length === 0 || unknown.length > 0)
    throw new UsageError(`--events takes event names among ${EVENT_TYPES.join(', ')}; unknown: ${unknown.join(', ')}`);
  return names as EventType[];
}

function pollIntervalOf(values: Values): number | undefined {
  const raw = values['poll-interval'] as string | undefined;
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 100 || ms > 3_600_000)
    throw new UsageError('--poll-interval must be whole milliseconds between 100 and 3600000');
  return ms;
}

/** Aborted by the context's signal (tests) or by Ctrl-C; the cleanup removes the SIGINT handler. */
function interruption(ctx: CliContext): { signal: AbortSignal; cleanup: () => void } {
  if (ctx.signal) return { signal: ctx.signal, cleanup: () => {} };
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  return { signal: controller.signal, cleanup: () => process.off('SIGINT', onSigint) };
}

/** Runs `loop` until interrupted; 0 when stopped by the user, 1 after a fatal API error. */
async function runUntilInterrupted(loop: PollLoop, ctx: CliContext): Promise<number> {
  const { signal, cleanup } = interruption(ctx);
  const stop = () => loop.stop();
  if (signal.aborted) stop();
  signal.addEventListener('abort', stop, { once: true });
  try {
    await loop.run();
    return 0;
  } catch (err) {
    ctx.stderr(`Error: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    signal.removeEventListener('abort', stop);
    cleanup();
  }
}

function followerFor(values: Values, ctx: CliContext) {
  const settings = apiSettings(values, ctx);
  const dispatcher = createGuardedDispatcher({ allowPrivateTargets: true });
  const api = createApiClient({ ...settings, dispatcher });
  const appId = values.app as string | undefined;
  const follower = new EventFollower({ api, appId, events: eventsOf(values) });
  return { follower, dispatcher, baseUrl: settings.baseUrl };
}

const reconnectReports = (ctx: CliContext) => ({
  onUnavailable: (error: Error, retryInMs: number) =>
    ctx.stderr(`${error.message}; trying again in ${Math.round(retryInMs / 1000)} s`),
  onRecovered: () => ctx.stderr('Reconnected: resuming where it stopped.'),
});

export const listen: Command = {
  path: ['listen'],
  summary: 'Forward events to a local URL, signed like real deliveries (local development)',
  usage: [
    'matricula listen --forward-to URL [--app APP] [--events A,B] [--api-key KEY] [--base-url URL]',
    '',
    '  --forward-to URL        where to POST each event, e.g. http://localhost:3000/hooks',
    FOLLOW_HELP,
    '',
    'Follows the events API from now on and forwards each new event with the headers and both',
    'signatures of a real delivery, made with a local signing secret printed at start. Shows each',
    'forward and the status it got; resumes where it stopped after a connection error. Ctrl-C stops.',
  ].join('\n'),
  options: { ...FOLLOW_OPTIONS, 'forward-to': { type: 'string' } },
  async run(values, _positionals, ctx) {
    const url = requireOption(values, 'forward-to');
    const shape = checkTargetUrlShape(url, { allowPrivateTargets: true });
    if (!shape.ok) throw new UsageError(`--forward-to: ${shape.message}`);
    const { follower, dispatcher, baseUrl } = followerFor(values, ctx);
    const secret = newSigningSecret();
    const loop = new PollLoop({
      follower,
      clock: ctx.clock,
      pollIntervalMs: pollIntervalOf(values),
      ...reconnectReports(ctx),
      onReady: () =>
        ctx.stdout(
          [
            `Ready! Your webhook signing secret is ${secret} (^C to quit)`,
            `Forwarding events from ${baseUrl} to ${url}`,
          ].join('\n'),
        ),
      onEvents: async (events) => {
        for (const event of events) {
          ctx.stdout(`${event.createdAt}  --> ${event.event} [${event.id}]`);
          const result = await forwardEvent(event, { url, secret, dispatcher, clock: ctx.clock });
          const status = result.status !== undefined ? `[${result.status}]` : `[${result.error}]`;
          const detail = result.ok || result.status !== undefined ? '' : ` ${result.errorMessage ?? ''}`;
          ctx.stdout(`${ctx.clock.now().toISOString()}  <-- ${status} POST ${url} [${event.id}]${detail}`);
        }
      },
    });
    try {
      return await runUntilInterrupted(loop, ctx);
    } finally {
      await dispatcher.close();
    }
  },
};

export const eventsTail: Command = {
  path: ['events', 'tail'],
  summary: 'Print events as they happen',
  usage: [
    'matricula events tail [--app APP] [--events A,B] [--json] [--api-key KEY] [--base-url URL]',
    '',
    FOLLOW_HELP,
    '  --json                  one event envelope per line (JSON Lines)',
    '',
    'Follows the events API from now on. Ctrl-C stops.',
  ].join('\n'),
  options: { ...FOLLOW_OPTIONS, json: { type: 'boolean' } },
  async run(values, _positionals, ctx) {
    const { follower, dispatcher, baseUrl } = followerFor(values, ctx);
    const line = (event: EventEnvelope) =>
      values.json
        ? JSON.stringify(event)
        : `${event.createdAt}  ${event.event.padEnd(22)}  ${event.id}  ${event.appId}`;
    const loop = new PollLoop({
      follower,
      clock: ctx.clock,
      pollIntervalMs: pollIntervalOf(values),
      ...reconnectReports(ctx),
      onReady: () => ctx.stderr(`Following events from ${baseUrl} (^C to quit)`),
      onEvents: (events) => {
        for (const event of events) ctx.stdout(line(event));
        return Promise.resolve();
      },
    });
    try {
      return await runUntilInterrupted(loop, ctx);
    } finally {
      await dispatcher.close();
    }
  },
};

export const webhooksTest: Command = {
  path: ['webhooks', 'test'],
  summary: 'Send a webhook.test event to an endpoint',
  usage: [
    'matricula webhooks test ENDPOINT_ID [--json] [--api-key KEY] [--base-url URL]',
    '',
    API_OPTIONS_HELP,
    '  --json                  print the delivery record',
  ].join('\n'),
  options: { ...API_OPTIONS, json: { type: 'boolean' } },
  async run(values, positionals, ctx) {
    const [endpointId, ...rest] = positionals;
    if (!endpointId || rest.length > 0) throw new UsageError('give exactly one endpoint id (whk_…)');
    if (!/^whk_[0-9a-z]{1,64}$/.test(endpointId)) throw new UsageError(`not an endpoint id: ${endpointId}`);
    const dispatcher = createGuardedDispatcher({ allowPrivateTargets: true });
    try {
      const api = createApiClient({ ...apiSettings(values, ctx), dispatcher });
      const { data } = await api.post<{ data: { id: string; eventId: string; status: string } }>(
        `/org/v1/webhooks/${endpointId}/test`,
      );
      if (values.json) printJson(ctx, data);
      else
        ctx.stdout(`Sent webhook.test to ${endpointId}: delivery ${data.id} (event ${data.eventId}), ${data.status}`);
      return 0;
    } finally {
      await dispatcher.close();
    }
  },
};
