import type { Db } from './db.ts';

// Placeholder: filled in by the work on this aggregate.
export function cloudAccountsStore(db: Db) {
  void db;
  return {};
}
