import { describe, expect, it } from 'vitest';
import {
  fixedHeartbeatPace,
  heartbeatIntervalOf,
  heartbeatPaceFor,
  isWorthRepacing,
} from '../../../services/gateway/heartbeat-pace.ts';

describe('heartbeatPaceFor', () => {
  it('beats every 15 s under the cap and at most every 30 s above it, with the default agent-lost timeout (120 s)', () => {
    expect(heartbeatPaceFor(120_000, 350)).toEqual({ baseMs: 15_000, maxMs: 30_000, perSecond: 350 });
  });

  it('keeps four beats inside a shorter agent-lost timeout, capped or not', () => {
    expect(heartbeatPaceFor(40_000, 350)).toEqual({ baseMs: 10_000, maxMs: 10_000, perSecond: 350 });
    expect(heartbeatPaceFor(100, 350)).toMatchObject({ baseMs: 250, maxMs: 250 });
  });

  it('never stretches past a third of the online window (90 s), however long the agent-lost timeout', () => {
    expect(heartbeatPaceFor(3_600_000, 350)).toMatchObject({ baseMs: 15_000, maxMs: 30_000 });
  });
});

describe('heartbeatIntervalOf', () => {
  const pace = heartbeatPaceFor(120_000, 350);

  it('is the base interval while the agents beat under the cap', () => {
    expect(heartbeatIntervalOf(pace, 0)).toBe(15_000);
    expect(heartbeatIntervalOf(pace, 5_250)).toBe(15_000);
  });

  it('spreads the agents over the cap above it: 10,000 agents at 350 a second beat every 28.6 s', () => {
    expect(heartbeatIntervalOf(pace, 7_000)).toBe(20_000);
    expect(heartbeatIntervalOf(pace, 10_000)).toBe(28_572);
  });

  it('stops at the longest interval: past it, liveness wins over the cap', () => {
    expect(heartbeatIntervalOf(pace, 10_500)).toBe(30_000);
    expect(heartbeatIntervalOf(pace, 50_000)).toBe(30_000);
  });

  it('is the fixed interval whatever the fleet when there is no cap', () => {
    expect(heartbeatIntervalOf(fixedHeartbeatPace(1_234), 1_000_000)).toBe(1_234);
  });
});

describe('isWorthRepacing', () => {
  it('tells an agent again only when the interval moved by 10 % or more, either way', () => {
    expect(isWorthRepacing(20_000, 21_999)).toBe(false);
    expect(isWorthRepacing(20_000, 22_000)).toBe(true);
    expect(isWorthRepacing(20_000, 18_001)).toBe(false);
    expect(isWorthRepacing(20_000, 15_000)).toBe(true);
    expect(isWorthRepacing(15_000, 15_000)).toBe(false);
  });
});
