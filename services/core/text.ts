/**
 * Text PostgreSQL cannot store as given: U+0000 (refused by `text`, "invalid byte sequence") and
 * lone UTF-16 surrogates (silently stored as U+FFFD, so what is read back is not what was sent).
 * Inputs are refused with these rather than stored altered.
 */
export function isStorableText(value: string): boolean {
  return !value.includes('\u0000') && value.isWellFormed();
}

/**
 * The path (`a.b[2].c`) of the first key or string in `value` that is not storable text, or null.
 * Iterative, so a hostile nesting depth cannot overflow the stack.
 */
export function findUnstorableText(value: unknown, root = ''): string | null {
  const pending: Array<{ value: unknown; path: string }> = [{ value, path: root }];
  while (pending.length > 0) {
    const { value: current, path } = pending.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return path;
    } else if (Array.isArray(current)) {
      current.forEach((item, index) => pending.push({ value: item, path: `${path}[${index}]` }));
    } else if (current !== null && typeof current === 'object') {
      for (const [key, item] of Object.entries(current)) {
        const child = path ? `${path}.${key}` : key;
        if (!isStorableText(key)) return child;
        pending.push({ value: item, path: child });
      }
    }
  }
  return null;
}
