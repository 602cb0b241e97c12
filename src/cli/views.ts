import type { ApplicationSummary } from '../services/applications.ts';
import type { GeneratedKey } from '../services/api-keys.ts';

/** The CLI prints the same shapes as the API (its OpenAPI document, /openapi.json). */
export function applicationListEntry(app: ApplicationSummary) {
  return {
    id: app.id,
    name: app.name,
    environment: app.environment,
    status: app.status,
    createdAt: app.createdAt,
    webhookCount: app.webhookCount,
    keyCount: app.keyCount,
  };
}

export function generatedKeyJson(key: GeneratedKey) {
  return {
    id: key.id,
    appId: key.appId,
    name: key.name,
    environment: key.environment,
    keyHint: key.keyHint,
    rawSecret: key.rawSecret,
    createdAt: key.createdAt,
  };
}
