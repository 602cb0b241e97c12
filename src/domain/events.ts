import type { Environment } from './environment.ts';

/** Every event the service emits (docs/webhooks.md, Events); webhook subscriptions name these. */
export const EVENT_TYPES = [
  'verification.completed',
  'verification.expired',
  'verification.cancelled',
  'verification.redacted',
  'consent.approved',
  'consent.declined',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** The envelope of every event (docs/webhooks.md), as stored, listed and delivered. */
export interface EventEnvelope {
  id: string;
  event: EventType;
  createdAt: string;
  appId: string;
  environment: Environment;
  data: Record<string, unknown>;
}
