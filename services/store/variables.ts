import type { Db } from './db.ts';

// Placeholder: filled in by the work on this aggregate.
export function variablesStore(db: Db) {
  void db;
  return {};
}
