import { newId } from '../domain/ids.ts';
import type { Environment } from '../domain/environment.ts';
import { insertOrganization, listOrganizations, type Organization } from '../store/organizations.ts';
import type { Page, PageRequest } from '../store/pagination.ts';
import { issueKey } from './api-keys.ts';
import { insertNewApplication } from './applications.ts';
import type { ServiceDeps } from './deps.ts';

/** Bootstrap (CLI, admin API): an organization, its first application and first key, in one transaction. */
export async function createOrganization(
  deps: Pick<ServiceDeps, 'db' | 'clock'>,
  input: { name: string; environment: Environment },
) {
  return deps.db.transaction().execute(async (trx) => {
    const organization: Organization = {
      id: newId('organization', deps.clock),
      name: input.name,
      createdAt: deps.clock.now().toISOString(),
    };
    await insertOrganization(trx, organization);
    const application = await insertNewApplication(trx, deps, organization.id, {
      name: `${input.name} (${input.environment})`,
      environment: input.environment,
    });
    const apiKey = await issueKey(trx, deps, application, 'bootstrap');
    return { organization, application: { ...application, keyCount: 1, webhookCount: 0 }, apiKey };
  });
}

/** Every organization, newest first: the operator's view (admin API). */
export function listAllOrganizations(deps: Pick<ServiceDeps, 'db'>, page: PageRequest): Promise<Page<Organization>> {
  return listOrganizations(deps.db, page);
}
