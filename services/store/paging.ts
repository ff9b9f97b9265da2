import type { Knex } from 'knex';
import type { Page, Paged } from '../core/index.ts';

/** Runs a filtered query twice: once for the total, once for the requested page. */
export async function pageOf<Row extends object, T>(
  query: Knex.QueryBuilder,
  page: Page,
  orderBy: Array<{ column: string; order?: 'asc' | 'desc' }>,
  map: (row: Row) => T,
): Promise<Paged<T>> {
  const [countRow] = await query.clone().clearSelect().clearOrder().count({ n: '*' });
  const rows: Row[] = await query.clone().orderBy(orderBy).offset(page.skip).limit(page.take);
  return { items: rows.map(map), totalCount: Number(countRow?.n ?? 0) };
}
