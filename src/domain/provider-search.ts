/**
 * The portal's type-ahead over identity providers: by name, domain or country, accents and case
 * ignored, every word of the query matching somewhere. Pure, over an index built once per
 * refresh of the registry, so a search over thousands of providers is a scan of short strings.
 */
export interface SearchableProvider {
  id: string;
  name: string;
  domain: string;
  country: string;
}

export interface ProviderIndex<T extends SearchableProvider> {
  entries: Array<{ provider: T; name: string; haystack: string }>;
}

export function normalize(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase();
}

export function indexProviders<T extends SearchableProvider>(providers: readonly T[]): ProviderIndex<T> {
  return {
    entries: providers.map((provider) => ({
      provider,
      name: normalize(provider.name),
      haystack: normalize(`${provider.name} ${provider.domain} ${provider.country}`),
    })),
  };
}

/** Up to `limit` providers matching every word of `query`, names starting with it first, then by name. */
export function searchProviders<T extends SearchableProvider>(
  index: ProviderIndex<T>,
  query: string,
  limit: number,
): T[] {
  const words = normalize(query).split(/\s+/).filter(Boolean).slice(0, 8);
  const ranked: Array<{ rank: number; name: string; provider: T }> = [];
  for (const entry of index.entries) {
    if (!words.every((w) => entry.haystack.includes(w))) continue;
    const rank = words.length === 0 ? 1 : entry.name.startsWith(words[0]!) ? 0 : 1;
    ranked.push({ rank, name: entry.name, provider: entry.provider });
  }
  ranked.sort((a, b) => a.rank - b.rank || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return ranked.slice(0, limit).map((r) => r.provider);
}
