import { randomUUID } from 'node:crypto';

/** Identifiers are opaque strings (contract §1). UUIDs today; callers must not parse them. */
export function newId(): string {
  return randomUUID();
}
