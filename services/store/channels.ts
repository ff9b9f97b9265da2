import type { Db } from './db.ts';

// Placeholder: filled in by the work on this aggregate.
export function channelsStore(db: Db) {
  void db;
  return {};
}
