// Identifiers from the control plane become folder names: only plain names are accepted.

const PLAIN_NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$/;

/** True when `value` can be used as one path segment on every OS (no separators, no `..`). */
export function isSafePathSegment(value: string): boolean {
  return PLAIN_NAME.test(value) && !value.includes('..');
}
