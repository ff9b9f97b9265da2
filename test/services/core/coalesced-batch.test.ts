/**
 * CoalescedBatch (services/core/coalesced-batch.ts): a lone call runs at once; calls made while
 * a batch runs are answered together by the next one, with the latest item per key.
 */
import { describe, expect, it } from 'vitest';
import { CoalescedBatch } from '../../../services/core/coalesced-batch.ts';

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('CoalescedBatch', () => {
  it('runs a lone call at once, not after the gap', async () => {
    const batch = new CoalescedBatch<string, number, string>(
      60_000,
      async (items) => new Map([...items].map(([key, item]) => [key, `${key}=${item}`])),
    );
    const started = performance.now();
    expect(await batch.get('a', 1)).toBe('a=1');
    // A batch that waited out its gap would answer after a minute (the test's timeout is shorter).
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('answers the calls made while a batch runs by one more run, with the latest item per key', async () => {
    const runs: Array<Map<string, number>> = [];
    const first = gate();
    const batch = new CoalescedBatch<string, number, string>(0, async (items) => {
      runs.push(new Map(items));
      if (runs.length === 1) await first.opened;
      return new Map([...items].map(([key, item]) => [key, `${key}=${item}`]));
    });
    const a = batch.get('a', 1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toHaveLength(1); // running, and held
    const later = [batch.get('b', 2), batch.get('c', 3), batch.get('c', 4)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs).toHaveLength(1); // the others wait for it
    first.open();
    expect(await a).toBe('a=1');
    expect(await Promise.all(later)).toEqual(['b=2', 'c=4', 'c=4']);
    expect(runs).toEqual([
      new Map([['a', 1]]),
      new Map([
        ['b', 2],
        ['c', 4],
      ]),
    ]);
  });

  it('waits out the gap after a run before the next one, gathering what came meanwhile', async () => {
    const runs: string[][] = [];
    const batch = new CoalescedBatch<string, null, number>(200, async (items) => {
      runs.push([...items.keys()]);
      return new Map([...items.keys()].map((key) => [key, runs.length]));
    });
    expect(await batch.get('a', null)).toBe(1);
    const afterFirst = performance.now();
    const next = [batch.get('b', null), batch.get('c', null)];
    expect(await Promise.all(next)).toEqual([2, 2]);
    expect(performance.now() - afterFirst).toBeGreaterThanOrEqual(150);
    expect(runs).toEqual([['a'], ['b', 'c']]);
  });

  it('rejects every call of a failed batch, and the next batch runs', async () => {
    let fail = true;
    const batch = new CoalescedBatch<string, null, string>(0, async (items) => {
      if (fail) throw new Error('database down');
      return new Map([...items.keys()].map((key) => [key, 'ok']));
    });
    const calls = [batch.get('a', null), batch.get('b', null)];
    await expect(calls[0]).rejects.toThrow('database down');
    await expect(calls[1]).rejects.toThrow('database down');
    fail = false;
    expect(await batch.get('a', null)).toBe('ok');
    // A key the run gave no answer for.
    const empty = new CoalescedBatch<string, null, string>(0, async () => new Map());
    expect(await empty.get('x', null)).toBeUndefined();
  });
});
