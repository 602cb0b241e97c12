import type { Environment } from './environment.ts';

/** Every event the service emits (DESIGN §6); webhook subscriptions name these. */
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

/** Spec 2.4: the envelope of every event, as stored, listed and delivered. */
export interface EventEnvelope {
  id: string;
  event: EventType;
  createdAt: string;
  appId: string;
  environment: Environment;
  data: Record<string, unknown>;
}
