/**
 * TimedBatch (services/engine/timed-batch.ts): calls within one window are answered by one run;
 * note() hands every caller of a window the same promise (heartbeats allocate nothing per call).
 */
import { describe, expect, it } from 'vitest';
import { TimedBatch } from '../../../services/engine/timed-batch.ts';

describe('TimedBatch', () => {
  it('runs once per window with the latest item per key, and answers each key its own', async () => {
    const runs: Array<Map<string, number>> = [];
    const batch = new TimedBatch<string, number, string>(20, async (items) => {
      runs.push(new Map(items));
      return new Map([...items].map(([key, item]) => [key, `${key}=${item}`]));
    });
    const answers = await Promise.all([batch.add('a', 1), batch.add('b', 2), batch.add('a', 3)]);
    expect(answers).toEqual(['a=3', 'b=2', 'a=3']);
    expect(runs).toEqual([
      new Map([
        ['a', 3],
        ['b', 2],
      ]),
    ]);
    expect(await batch.add('c', 4)).toBe('c=4'); // a new window
    expect(runs).toHaveLength(2);
  });

  it('gives the callers of one window the same promise through note(), and a new one after it ran', async () => {
    const batch = new TimedBatch<string, number, never>(10, async () => undefined);
    const first = batch.note('a', 1);
    expect(batch.note('b', 2)).toBe(first);
    await first;
    expect(batch.note('a', 3)).not.toBe(first);
    await batch.flush();
  });

  it('rejects every caller of a window whose run failed, and nothing is left unhandled', async () => {
    const batch = new TimedBatch<string, number, string>(10, () => Promise.reject(new Error('database down')));
    const noted = batch.note('a', 1); // nobody awaits this one until after the failure
    await expect(batch.add('b', 2)).rejects.toThrow('database down');
    await expect(noted).rejects.toThrow('database down');
  });
});
