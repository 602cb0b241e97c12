/**
 * What the service counts and times, as its layers see it: the use cases, the delivery worker and
 * the HTTP adapter call these methods on the recorder they are handed (ServiceDeps.metrics), never
 * a global. The Prometheus implementation is services/metrics.ts; {@link noMetrics} records nothing.
 */

/** How a session ended: the outcome label of `matricula_sessions_completed_total`. */
export type SessionOutcome = 'verified' | 'not_verified' | 'declined' | 'expired' | 'cancelled';

/** What redacted a session: its business's request, or `RESULT_RETENTION_DAYS`. */
export type RedactionTrigger = 'request' | 'retention';

/** What one presentation check came to: the result label of the verification-time histogram. */
export type PresentationCheckResult = 'rejected' | 'verified' | 'not_verified';

/** What one delivery attempt came to (webhooks/worker.ts). */
export type DeliveryResult = 'succeeded' | 'retrying' | 'failed' | 'lost';

/** What an issuer publishes, fetched over the network: the kind label of `matricula_issuer_fetches_total`. */
export type IssuerFetchKind = 'metadata' | 'jwks' | 'status_list';

export interface MetricsRecorder {
  /** One HTTP request: `route` is the route pattern (`/org/v1/apps/:appId`), never the raw URL. */
  httpRequest(input: { method: string; route: string; status: number; seconds: number }): void;
  sessionCreated(input: { environment: string }): void;
  /** `format` is the credential format of the presentation, or `none` when no presentation decided it. */
  sessionCompleted(input: { outcome: SessionOutcome; format: string }): void;
  presentationChecked(input: { format: string; result: PresentationCheckResult; seconds: number }): void;
  sessionRedacted(input: { trigger: RedactionTrigger }): void;
  webhookDelivery(input: { result: DeliveryResult }): void;
  /** One network fetch of an issuer publication (services/issuer-publications.ts). */
  issuerFetch(input: { kind: IssuerFetchKind; result: 'ok' | 'error' }): void;
  /** A presentation let through with its revocation status unknown (STATUS_LIST_POLICY=warn). */
  credentialStatusUnknown(): void;
  /** An OpenID4VP wallet answered with an error response; `error` is a known code or `other`. */
  openid4vpWalletError(input: { error: string }): void;
}

/** A recorder that records nothing (the CLI, and tools that build services without an HTTP app). */
export const noMetrics: MetricsRecorder = {
  httpRequest: () => {},
  sessionCreated: () => {},
  sessionCompleted: () => {},
  presentationChecked: () => {},
  sessionRedacted: () => {},
  webhookDelivery: () => {},
  issuerFetch: () => {},
  credentialStatusUnknown: () => {},
  openid4vpWalletError: () => {},
};
