import type { Db } from './db.ts';

// Placeholder: filled in by the work on this aggregate.
export function machinesStore(db: Db) {
  void db;
  return {};
}
