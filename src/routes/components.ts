import type { TSchema } from '@sinclair/typebox';
import { SHARED_COMPONENTS } from '../http/schemas.ts';
import { APP_COMPONENTS } from './apps.ts';
import { EVENT_COMPONENTS, EVENT_SCHEMAS } from './events.ts';
import { KEY_COMPONENTS } from './keys.ts';
import { OPENID4VP_COMPONENTS } from './openid4vp.ts';
import { PORTAL_COMPONENTS } from './portal.ts';
import { SANDBOX_WALLET_COMPONENTS } from './sandbox-wallet.ts';
import { SESSION_COMPONENTS } from './session-schemas.ts';
import { UNIVERSITY_LOGIN_COMPONENTS } from './university-login.ts';
import { VERIFY_COMPONENTS } from './verify.ts';
import { WALLET_COMPONENTS } from './wallet.ts';
import { WEBHOOK_COMPONENTS } from './webhooks.ts';

/**
 * Every named schema of the API, registered once by the app (`addSchema`): routes refer to them
 * with `Ref`, the OpenAPI document lists them under components.schemas by their `$id`, and the
 * body validators resolve the same references.
 */
export const COMPONENT_SCHEMAS: TSchema[] = [
  ...SHARED_COMPONENTS,
  ...SESSION_COMPONENTS,
  ...APP_COMPONENTS,
  ...KEY_COMPONENTS,
  ...WEBHOOK_COMPONENTS,
  ...EVENT_COMPONENTS,
  ...VERIFY_COMPONENTS,
  ...WALLET_COMPONENTS,
  ...OPENID4VP_COMPONENTS,
  ...PORTAL_COMPONENTS,
  ...SANDBOX_WALLET_COMPONENTS,
  ...UNIVERSITY_LOGIN_COMPONENTS,
];

/** The schema of each event type's payload, by event name: the document's `webhooks` section. */
export const WEBHOOK_EVENT_SCHEMAS: Record<string, string> = Object.fromEntries(
  Object.entries(EVENT_SCHEMAS).map(([event, schema]) => [event, schema.$id as string]),
);
