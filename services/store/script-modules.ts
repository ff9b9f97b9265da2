import type { Db } from './db.ts';

// Placeholder: filled in by the work on this aggregate.
export function scriptModulesStore(db: Db) {
  void db;
  return {};
}
