/**
 * Lists of IDs as ONE bind parameter (a text[]), so a statement's size does not grow with the
 * fleet: PostgreSQL allows 65,535 bind parameters, and `whereIn` or a multi-row insert spends one
 * per value (7 per row for tasks: a deployment to 10,002 machines never started).
 */
import type { Knex } from 'knex';

/** `column = any($1::text[])`: a where clause for any number of IDs. */
export function whereIdIn<Q extends Knex.QueryBuilder>(query: Q, column: string, ids: readonly string[]): Q {
  return query.whereRaw('?? = any(?::text[])', [column, [...ids]]) as Q;
}
