import type { SelectQueryBuilder } from 'kysely';

/** Cursor pagination over ids (ids sort by creation time): newest first, `startingAfter` = last id seen. */
export interface PageRequest {
  limit: number;
  startingAfter?: string;
}

export interface Page<T> {
  items: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

export async function fetchPage<DB, TB extends keyof DB, Row extends { id: string }, T>(
  query: SelectQueryBuilder<DB, TB, Row>,
  idColumn: string,
  page: PageRequest,
  map: (row: Row) => T,
): Promise<Page<T>> {
  let q = query as SelectQueryBuilder<any, any, Row>;
  if (page.startingAfter) q = q.where(idColumn, '<', page.startingAfter);
  const rows = await q
    .orderBy(idColumn, 'desc')
    .limit(page.limit + 1)
    .execute();
  const hasMore = rows.length > page.limit;
  const items = rows.slice(0, page.limit);
  return { items: items.map(map), hasMore, nextCursor: hasMore ? items[items.length - 1].id : null };
}
