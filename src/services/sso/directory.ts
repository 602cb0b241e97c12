import type { Clock } from '../../domain/clock.ts';
import type { Environment } from '../../domain/environment.ts';
import {
  indexProviders,
  searchProviders,
  type ProviderIndex,
  type SearchableProvider,
} from '../../domain/provider-search.ts';
import type { Db } from '../../store/db.ts';
import { listIdentityProviders } from '../../store/identity-providers.ts';

/** How long a process searches a copy of the registry before reading it again. */
export const DIRECTORY_TTL_MS = 30_000;

/**
 * The identity providers the portal's search runs over, per environment: read from the registry
 * at most every 30 s (a provider added or removed shows within that; a login always reads the
 * registry itself), and indexed once per read.
 */
export class ProviderDirectory {
  readonly #copies = new Map<
    Environment,
    { index: ProviderIndex<SearchableProvider>; at: number; loading?: Promise<void> }
  >();

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  async search(environment: Environment, query: string, limit: number): Promise<SearchableProvider[]> {
    const copy = this.#copies.get(environment);
    const now = this.clock.now().getTime();
    if (!copy || now - copy.at >= DIRECTORY_TTL_MS) await this.#load(environment);
    return searchProviders(this.#copies.get(environment)!.index, query, limit);
  }

  async #load(environment: Environment): Promise<void> {
    const current = this.#copies.get(environment);
    if (current?.loading) return current.loading;
    const loading = (async () => {
      const providers = (await listIdentityProviders(this.db, environment)).map(({ id, name, domain, country }) => ({
        id,
        name,
        domain,
        country,
      }));
      this.#copies.set(environment, { index: indexProviders(providers), at: this.clock.now().getTime() });
    })();
    this.#copies.set(environment, { ...(current ?? { index: indexProviders([]), at: 0 }), loading });
    try {
      await loading;
    } catch (err) {
      this.#copies.set(environment, { ...(current ?? { index: indexProviders([]), at: 0 }) });
      throw err;
    }
  }
}
