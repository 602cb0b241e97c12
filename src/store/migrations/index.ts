import type { Migration } from 'kysely';
import * as foundation from './0001_foundation.ts';
import * as sessions from './0002_sessions.ts';
import * as webhooks from './0003_webhooks.ts';

/** Every migration, in order. Names are permanent: never rename or edit one that has shipped. */
export const MIGRATIONS: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_sessions': sessions,
  '0003_webhooks': webhooks,
};
