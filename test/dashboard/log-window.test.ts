/**
 * The part of a long log the dashboard holds (use-deployment-events.ts): never more than
 * KEPT_LINES plus one drop's worth, the lines dropped counted as earlier lines, and a window from
 * a permalinked line cut at KEPT_LINES.
 */
import { describe, expect, it } from 'vitest';
import {
  EMPTY,
  KEPT_LINES,
  withBatch,
  type DeploymentLog,
  type LogLine,
} from '../../dashboard/src/api/use-deployment-events.ts';

let tick = 1_000n;
const lines = (n: number, data = 'line'): LogLine[] =>
  Array.from({ length: n }, () => ({
    CreatedUtcTick: String(++tick),
    CreatedUtc: '2026-11-28T10:00:00.000Z',
    LogLevel: 'Information',
    Data: data,
  }));

describe('the lines the dashboard holds of a log', () => {
  it('following the tail, drops the oldest past the bound, counts them as earlier, and keeps the newest in order', () => {
    let log: DeploymentLog = { ...EMPTY, earlierLines: 40 };
    let largest = 0;
    for (let i = 0; i < 250; i++) {
      log = withBatch(log, lines(1_000), false);
      largest = Math.max(largest, log.lines.length);
    }
    expect(largest).toBeLessThanOrEqual(KEPT_LINES * 1.1);
    expect(log.lines.length).toBeGreaterThanOrEqual(KEPT_LINES);
    expect(log.earlierLines! + log.lines.length).toBe(40 + 250_000);
    expect(log.lines.at(-1)!.CreatedUtcTick).toBe(String(tick));
    const ticks = log.lines.map((l) => BigInt(l.CreatedUtcTick));
    expect(ticks.every((t, i) => i === 0 || t === ticks[i - 1]! + 1n)).toBe(true);
    expect(log.laterLinesCut).toBe(false);
  });

  it('in a window from a line, keeps its first KEPT_LINES and says later lines were cut', () => {
    let log: DeploymentLog = { ...EMPTY, earlierLines: null, connected: true };
    const first = lines(60_000);
    log = withBatch(log, first, true);
    expect(log.laterLinesCut).toBe(false);
    log = withBatch(log, lines(60_000), true);
    expect(log.lines).toHaveLength(KEPT_LINES);
    expect(log.lines[0]).toBe(first[0]);
    expect(log.laterLinesCut).toBe(true);
    expect(log.connected).toBe(false);
  });

  it('counts gate lines as they arrive, dropped or not', () => {
    let log = withBatch(EMPTY, [...lines(2, 'Waiting: approval'), ...lines(1, 'Approved by Ann'), ...lines(3)], false);
    expect(log.gateLines).toBe(3);
    log = withBatch(log, lines(KEPT_LINES + 20_000), false);
    expect(log.gateLines).toBe(3);
    expect(log.lines.some((l) => l.Data.startsWith('Waiting'))).toBe(false);
  });
});
