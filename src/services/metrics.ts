import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../domain/clock.ts';
import type {
  IssuerFetchKind,
  DeliveryResult,
  MetricsRecorder,
  PresentationCheckResult,
  RedactionTrigger,
  SessionOutcome,
} from '../domain/metrics.ts';
import type { Db } from '../store/db.ts';
import { HttpRequestMetrics } from './http-metrics.ts';
import { dueDeliveryBacklog } from '../store/webhook-deliveries/read-model.ts';

/** What the metrics read of the proof pool (proofs/worker/pool.ts). */
export interface ProofPoolStats {
  readonly threads: number;
  readonly queued: number;
}

/** What the metrics read of a PostgreSQL pool (pg.Pool has these). */
export interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The Prometheus metrics of one app instance, in a registry of its own (tests build many apps in
 * one process; the default global registry would mix them). Counters and histograms are moved by
 * the recorder methods; the outbox and pool gauges are read when scraped.
 */
export class PrometheusMetrics implements MetricsRecorder {
  readonly registry = new Registry();
  readonly #http: HttpRequestMetrics;
  readonly #sessionsCreated: Counter<'environment'>;
  readonly #sessionsCompleted: Counter<'outcome' | 'format'>;
  readonly #sessionsRedacted: Counter<'trigger'>;
  readonly #presentation: Histogram<'format' | 'result'>;
  readonly #deliveries: Counter<'result'>;
  readonly #issuerFetches: Counter<'kind' | 'result'>;
  readonly #statusUnknown: Counter;
  readonly #walletErrors: Counter<'error'>;

  constructor(input: {
    db: Db;
    clock: Clock;
    pool?: PoolStats;
    proofPool?: ProofPoolStats;
    /** The portal's long polls (services/session-watch.ts): how many wait now. */
    statusWaits?: { readonly open: number };
  }) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.#http = new HttpRequestMetrics(this.registry);
    this.#sessionsCreated = new Counter({
      name: 'matricula_sessions_created_total',
      help: 'Verification sessions created, by environment.',
      labelNames: ['environment'],
      registers,
    });
    this.#sessionsCompleted = new Counter({
      name: 'matricula_sessions_completed_total',
      help: 'Verification sessions that reached a final state, by outcome and credential format (none: no presentation decided it).',
      labelNames: ['outcome', 'format'],
      registers,
    });
    this.#sessionsRedacted = new Counter({
      name: 'matricula_sessions_redacted_total',
      help: 'Sessions whose data was erased, by trigger (request: POST …/redact; retention: RESULT_RETENTION_DAYS).',
      labelNames: ['trigger'],
      registers,
    });
    this.#presentation = new Histogram({
      name: 'matricula_presentation_verification_seconds',
      help: 'Time to verify one presentation (cryptography and claims), by format and result.',
      labelNames: ['format', 'result'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    this.#deliveries = new Counter({
      name: 'matricula_webhook_deliveries_total',
      help: 'Webhook delivery attempts, by result (succeeded, retrying, failed, lost: the lease was lost).',
      labelNames: ['result'],
      registers,
    });
    this.#issuerFetches = new Counter({
      name: 'matricula_issuer_fetches_total',
      help: 'Network fetches of what issuers publish, by kind (metadata, jwks, status_list) and result (ok, error).',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.#statusUnknown = new Counter({
      name: 'matricula_credential_status_unknown_total',
      help: 'Presentations let through with their revocation status unknown (STATUS_LIST_POLICY=warn).',
      registers,
    });
    this.#walletErrors = new Counter({
      name: 'matricula_openid4vp_wallet_errors_total',
      help: 'OpenID4VP error responses from wallets, by error code (other: not a code of OpenID4VP or OAuth).',
      labelNames: ['error'],
      registers,
    });

    const { db, clock, pool } = input;
    // One database read per scrape serves both outbox gauges.
    let backlog: Promise<{ count: number; oldestDueAt: string | null }> | undefined;
    const readBacklog = () => {
      backlog ??= dueDeliveryBacklog(db, clock.now().toISOString()).finally(() => {
        backlog = undefined;
      });
      return backlog;
    };
    new Gauge({
      name: 'matricula_outbox_due_deliveries',
      help: 'Webhook deliveries due now and not yet sent (to enabled endpoints).',
      registers,
      async collect() {
        this.set((await readBacklog()).count);
      },
    });
    new Gauge({
      name: 'matricula_outbox_oldest_due_age_seconds',
      help: 'How long the oldest due webhook delivery has waited; 0 when none is due.',
      registers,
      async collect() {
        const { oldestDueAt } = await readBacklog();
        this.set(oldestDueAt ? Math.max(0, (clock.now().getTime() - Date.parse(oldestDueAt)) / 1000) : 0);
      },
    });
    const { statusWaits } = input;
    if (statusWaits)
      new Gauge({
        name: 'matricula_status_requests_waiting',
        help: 'Status requests held open for a change (the portal page long poll); beyond the per-process bound more are refused (429).',
        registers,
        collect() {
          this.set(statusWaits.open);
        },
      });
    const { proofPool } = input;
    if (proofPool) {
      new Gauge({
        name: 'matricula_proof_pool_threads',
        help: 'Worker threads that build and verify BBS and Groth16 proofs (PROOF_WORKERS).',
        registers,
        collect() {
          this.set(proofPool.threads);
        },
      });
      new Gauge({
        name: 'matricula_proof_pool_queued_tasks',
        help: 'Proof tasks waiting for a worker thread; at PROOF_QUEUE_MAX more are refused with a 429.',
        registers,
        collect() {
          this.set(proofPool.queued);
        },
      });
    }
    if (pool) {
      const poolGauge = (name: string, help: string, read: (p: PoolStats) => number) =>
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read(pool));
          },
        });
      poolGauge('matricula_db_pool_connections', 'PostgreSQL pool: open connections.', (p) => p.totalCount);
      poolGauge('matricula_db_pool_idle_connections', 'PostgreSQL pool: idle connections.', (p) => p.idleCount);
      poolGauge(
        'matricula_db_pool_waiting_requests',
        'PostgreSQL pool: queries waiting for a connection.',
        (p) => p.waitingCount,
      );
    }
  }

  httpRequest(input: { method: string; route: string; status: number; seconds: number }): void {
    this.#http.record(input.method, input.route, input.status, input.seconds);
  }

  sessionCreated(input: { environment: string }): void {
    this.#sessionsCreated.inc(input);
  }

  sessionCompleted(input: { outcome: SessionOutcome; format: string }): void {
    this.#sessionsCompleted.inc(input);
  }

  sessionRedacted(input: { trigger: RedactionTrigger }): void {
    this.#sessionsRedacted.inc(input);
  }

  presentationChecked(input: { format: string; result: PresentationCheckResult; seconds: number }): void {
    this.#presentation.observe({ format: input.format, result: input.result }, input.seconds);
  }

  webhookDelivery(input: { result: DeliveryResult }): void {
    this.#deliveries.inc(input);
  }

  issuerFetch(input: { kind: IssuerFetchKind; result: 'ok' | 'error' }): void {
    this.#issuerFetches.inc(input);
  }

  credentialStatusUnknown(): void {
    this.#statusUnknown.inc();
  }

  openid4vpWalletError(input: { error: string }): void {
    this.#walletErrors.inc(input);
  }

  /** The exposition text and its content type, for GET /metrics. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
