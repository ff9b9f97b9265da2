// Masks Sensitive variable values in every text that leaves the agent (log lines, messages).

export const MASK = '********';

export type Masker = (text: string) => string;

/**
 * Builds a masker for `values`. A multi-line value is also masked line by line, because output
 * is split into lines before masking. Longest values first, so a value containing another is
 * masked whole.
 */
export function createMasker(values: readonly string[]): Masker {
  const needles = new Set<string>();
  for (const value of values) {
    if (value === '') continue;
    needles.add(value);
    for (const line of value.split(/\r?\n/)) if (line.trim() !== '') needles.add(line);
  }
  if (needles.size === 0) return (text) => text;
  const pattern = new RegExp(
    [...needles]
      .sort((a, b) => b.length - a.length)
      .map(escapeRegExp)
      .join('|'),
    'g',
  );
  return (text) => text.replace(pattern, MASK);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A masker for text holding whole lines (a log chunk: lines joined by '\n'). Each line of a
 * multi-line value is masked where it appears, and no pattern spans a line break, so masking
 * never changes how many lines the text holds (their sequence numbers depend on it).
 */
export function createLineMasker(values: readonly string[]): Masker {
  return createMasker(values.flatMap((value) => value.split(/\r?\n/)));
}
