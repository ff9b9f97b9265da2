import { describe, expect, it } from 'vitest';
import { BoundedCache } from '../../../services/core/index.ts';

describe('BoundedCache', () => {
  it('keeps at most its capacity, dropping the oldest insertion first', () => {
    const cache = new BoundedCache<number>(2);
    cache.remember('a', 1);
    cache.remember('b', 2);
    cache.remember('c', 3);
    expect(cache.get('a')).toBeUndefined();
    expect([cache.get('b'), cache.get('c'), cache.size]).toEqual([2, 3, 2]);
  });

  it('counts a re-remembered key as new, and forgets on request', () => {
    const cache = new BoundedCache<string>(2);
    cache.remember('a', 'old');
    cache.remember('b', 'b');
    cache.remember('a', 'new'); // now the newest: 'b' is the oldest
    cache.remember('c', 'c');
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual(['new', undefined, 'c']);
    cache.forget('a');
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(1);
  });

  it('loads a missing value once and keeps it only when asked to', async () => {
    const cache = new BoundedCache<{ status: string }>(4);
    let loads = 0;
    const load = (status: string) => async () => {
      loads++;
      return { status };
    };
    expect(await cache.getOrLoad('a', load('Running'))).toEqual({ status: 'Running' });
    expect(await cache.getOrLoad('a', load('other'))).toEqual({ status: 'Running' });
    expect(loads).toBe(1);
    const running = (value: { status: string }) => value.status === 'Running';
    expect(await cache.getOrLoad('b', load('Succeeded'), running)).toEqual({ status: 'Succeeded' });
    expect(cache.get('b')).toBeUndefined();
    expect(await cache.getOrLoad('c', async () => null)).toBeNull();
    expect(cache.size).toBe(1);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new BoundedCache(0)).toThrow(RangeError);
    expect(() => new BoundedCache(1.5)).toThrow(RangeError);
  });
});
