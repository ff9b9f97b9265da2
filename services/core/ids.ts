import { randomUUID } from 'node:crypto';

/** Identifiers are opaque strings (contract §1). UUIDs today; callers must not parse them. */
export function newId(): string {
  return randomUUID();
}

/**
 * What any identifier Gantry issues looks like (UUIDs, and the bootstrap account ID an operator
 * chooses): checked before a query, so text no ID can be — NUL, spaces, 10,000 characters — is
 * refused as malformed instead of travelling to PostgreSQL.
 */
export const ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$';
const ID_REGEX = new RegExp(ID_PATTERN);

export function isWellFormedId(value: string): boolean {
  return ID_REGEX.test(value);
}
