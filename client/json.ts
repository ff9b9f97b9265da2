/**
 * JSON parsing that keeps int64 values exact. Ticks are .NET ticks (larger than 2^53): the server
 * writes them as JSON integers, which JSON.parse would round. Integer values of the properties
 * the document types int64 are read as decimal strings instead; everything else is JSON.parse.
 */
import { INT64_PROPERTIES } from './schema.ts';

/** Quotes the integer values of int64 properties in a JSON text, outside string literals. */
export function quoteInt64Values(text: string, int64: ReadonlySet<string> = INT64_PROPERTIES): string {
  let out = '';
  let copied = 0;
  let i = 0;
  let lastString = '';
  let afterColonOf: string | null = null;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const start = i++;
      while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      lastString = text.slice(start + 1, i - 1);
      continue;
    }
    if (c === ':') {
      afterColonOf = lastString;
      i++;
      continue;
    }
    if (afterColonOf !== null && (c === '-' || (c >= '0' && c <= '9'))) {
      const start = i;
      i++;
      while (i < text.length && /[0-9eE.+-]/.test(text[i]!)) i++;
      const token = text.slice(start, i);
      if (int64.has(afterColonOf) && /^-?\d+$/.test(token)) {
        out += text.slice(copied, start) + '"' + token + '"';
        copied = i;
      }
      afterColonOf = null;
      continue;
    }
    if (c !== ' ' && c !== '\n' && c !== '\r' && c !== '\t') afterColonOf = null;
    i++;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

export function parseJson<T = unknown>(text: string): T {
  return JSON.parse(quoteInt64Values(text)) as T;
}
