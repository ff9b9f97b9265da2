/** Durations as people write them in a pipeline: `90` (seconds), `2s`, `500ms`, `10m`, `1h30m`. */
import { UsageError } from './exit-codes.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

export function parseDuration(text: string, option = 'duration'): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const parts = [...trimmed.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== trimmed)
    throw new UsageError(`${option}: '${text}' is not a duration (examples: 90, 2s, 500ms, 10m, 1h30m)`);
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNIT_MS[p[2]!]!, 0));
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, '0')}s`;
}
