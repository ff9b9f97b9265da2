import { describe, expect, it } from 'vitest';
import { backoffDelayMs, DEFAULT_BACKOFF } from '../../../agent/connection/backoff.ts';

describe('backoffDelayMs', () => {
  it('doubles the ceiling from 0.5 s and caps it at 30 s', () => {
    const ceilings = [0, 1, 2, 3, 6, 7, 20, 100].map((attempt) => backoffDelayMs(attempt, DEFAULT_BACKOFF, () => 1));
    expect(ceilings).toEqual([500, 1000, 2000, 4000, 30_000, 30_000, 30_000, 30_000]);
  });

  it('draws the delay uniformly below the ceiling (full jitter)', () => {
    expect(backoffDelayMs(3, DEFAULT_BACKOFF, () => 0)).toBe(0);
    expect(backoffDelayMs(3, DEFAULT_BACKOFF, () => 0.25)).toBe(1000);
  });
});
