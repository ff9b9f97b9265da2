import { describe, expect, it } from 'vitest';
import { ExpiringCache } from '../../../services/core/index.ts';
import { deferred } from '../../helpers/deferred.ts';

describe('ExpiringCache', () => {
  it('keeps a value for its max age from the start of its read, then reads again', async () => {
    const cache = new ExpiringCache<string>({ capacity: 4, maxAgeMs: 1_000 });
    let loads = 0;
    const load = async () => `v${++loads}`;
    expect(await cache.getOrLoad('k', 10_000, load)).toBe('v1');
    expect(await cache.getOrLoad('k', 10_999, load)).toBe('v1');
    expect(await cache.getOrLoad('k', 11_000, load)).toBe('v2');
    expect(cache.get('k', 11_999)).toBe('v2');
    expect(cache.get('k', 12_000)).toBeUndefined();
  });

  it('keeps neither null nor what `keep` refuses, and stays within its capacity', async () => {
    const cache = new ExpiringCache<{ final: boolean }>({ capacity: 2, maxAgeMs: 1_000 });
    expect(await cache.getOrLoad('none', 0, async () => null)).toBeNull();
    await cache.getOrLoad(
      'running',
      0,
      async () => ({ final: false }),
      (v) => v.final,
    );
    expect([cache.get('none', 1), cache.get('running', 1), cache.size]).toEqual([undefined, undefined, 0]);
    for (const key of ['a', 'b', 'c']) await cache.getOrLoad(key, 0, async () => ({ final: true }));
    expect([cache.get('a', 1), cache.get('c', 1), cache.size]).toEqual([undefined, { final: true }, 2]);
  });

  it('does not keep a read that was under way when its key was forgotten or the cache cleared', async () => {
    const cache = new ExpiringCache<string>({ capacity: 4, maxAgeMs: 1_000 });
    const before = deferred<string>();
    const reading = cache.getOrLoad('k', 0, () => before.promise);
    cache.forget('k');
    before.resolve('before the change');
    expect(await reading).toBe('before the change'); // its own caller still gets it
    expect(cache.get('k', 1)).toBeUndefined();

    const other = deferred<string>();
    const otherReading = cache.getOrLoad('other', 0, () => other.promise);
    cache.clear();
    other.resolve('stale');
    await otherReading;
    expect(cache.get('other', 1)).toBeUndefined();

    // A key forgotten by prefix (all answers of one deployment), reads under way included.
    const page = deferred<string>();
    const pageReading = cache.getOrLoad('d1:page', 0, () => page.promise);
    await cache.getOrLoad('d2:page', 0, async () => 'kept');
    cache.forgetPrefix('d1:');
    page.resolve('stale');
    await pageReading;
    expect([cache.get('d1:page', 1), cache.get('d2:page', 1)]).toEqual([undefined, 'kept']);
  });

  it('shares one read between concurrent misses only when asked to, and never a read from before a forget', async () => {
    const shared = new ExpiringCache<string>({ capacity: 4, maxAgeMs: 1_000, shareLoads: true });
    let loads = 0;
    const slow = deferred<string>();
    const first = shared.getOrLoad('k', 0, () => (loads++, slow.promise));
    const second = shared.getOrLoad('k', 0, () => (loads++, Promise.resolve('second')));
    slow.resolve('first');
    expect([await first, await second, loads]).toEqual(['first', 'first', 1]);

    const old = deferred<string>();
    const beforeForget = shared.getOrLoad('j', 0, () => old.promise);
    shared.forget('j');
    const afterForget = shared.getOrLoad('j', 0, async () => 'after');
    old.resolve('before');
    expect([await beforeForget, await afterForget, shared.get('j', 1)]).toEqual(['before', 'after', 'after']);

    const unshared = new ExpiringCache<string>({ capacity: 4, maxAgeMs: 1_000 });
    let reads = 0;
    await Promise.all([1, 2, 3].map(() => unshared.getOrLoad('k', 0, async () => `r${++reads}`)));
    expect(reads).toBe(3);
  });

  it('marks every concurrent read of a forgotten key stale, not only the latest', async () => {
    const cache = new ExpiringCache<string>({ capacity: 4, maxAgeMs: 1_000 });
    const a = deferred<string>();
    const b = deferred<string>();
    const first = cache.getOrLoad('k', 0, () => a.promise);
    const second = cache.getOrLoad('k', 0, () => b.promise);
    cache.forget('k');
    b.resolve('b');
    a.resolve('a');
    await Promise.all([first, second]);
    expect(cache.get('k', 1)).toBeUndefined();
  });
});
