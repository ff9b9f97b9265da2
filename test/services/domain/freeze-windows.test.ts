import { describe, expect, it } from 'vitest';
import { activeFreezes, freezeEndsAt, parseCron } from '../../../services/domain/freeze-windows.ts';
import type { DeploymentFreeze } from '../../../services/store/index.ts';

const at = (iso: string) => new Date(iso);

function freeze(parts: Partial<DeploymentFreeze>): DeploymentFreeze {
  return {
    id: 'f',
    workspaceId: 'w',
    name: 'Weekend',
    description: null,
    startUtc: null,
    endUtc: null,
    recurrence: null,
    environmentIds: ['prod'],
    projectIds: [],
    createdUtc: at('2026-01-01T00:00:00Z'),
    ...parts,
  };
}

describe('freezeEndsAt', () => {
  // Friday 18:00 in Berlin until Monday 10:00: 64 hours.
  const weekend = freeze({ recurrence: { cron: '0 18 * * 5', durationMinutes: 64 * 60, timeZone: 'Europe/Berlin' } });

  it('holds a recurring window from its start in its own time zone until its duration ends', () => {
    // November: Berlin is UTC+1, so Friday 18:00 is 17:00Z and Monday 10:00 is 09:00Z.
    expect(freezeEndsAt(weekend, at('2026-11-27T16:59:00Z'))).toBeNull();
    expect(freezeEndsAt(weekend, at('2026-11-27T17:00:00Z'))).toEqual(at('2026-11-30T09:00:00Z'));
    expect(freezeEndsAt(weekend, at('2026-11-29T12:00:00Z'))).toEqual(at('2026-11-30T09:00:00Z'));
    expect(freezeEndsAt(weekend, at('2026-11-30T08:59:59Z'))).toEqual(at('2026-11-30T09:00:00Z'));
    expect(freezeEndsAt(weekend, at('2026-11-30T09:00:00Z'))).toBeNull();
    expect(freezeEndsAt(weekend, at('2026-11-25T12:00:00Z'))).toBeNull();
  });

  it('follows daylight saving time', () => {
    // July: Berlin is UTC+2, so Friday 18:00 is 16:00Z.
    expect(freezeEndsAt(weekend, at('2026-07-03T15:59:00Z'))).toBeNull();
    expect(freezeEndsAt(weekend, at('2026-07-03T16:00:00Z'))).toEqual(at('2026-07-06T08:00:00Z'));
  });

  it('finds a window across the change of offset it spans', () => {
    // Every Saturday 12:00 in Berlin for 40 hours; Sunday 25 October 2026 at 03:00 CEST the
    // clocks go back to 02:00 CET. Saturday 12:00 CEST is 10:00Z; 40 hours later is Monday 02:00Z.
    const overDst = freeze({ recurrence: { cron: '0 12 * * 6', durationMinutes: 40 * 60, timeZone: 'Europe/Berlin' } });
    expect(freezeEndsAt(overDst, at('2026-10-24T09:59:00Z'))).toBeNull();
    expect(freezeEndsAt(overDst, at('2026-10-24T10:00:00Z'))).toEqual(at('2026-10-26T02:00:00Z'));
    expect(freezeEndsAt(overDst, at('2026-10-26T01:59:00Z'))).toEqual(at('2026-10-26T02:00:00Z'));
    expect(freezeEndsAt(overDst, at('2026-10-26T02:00:00Z'))).toBeNull();
  });

  it('holds a single window from its start (inclusive) to its end (exclusive)', () => {
    const window = freeze({ startUtc: at('2026-12-20T00:00:00Z'), endUtc: at('2027-01-04T00:00:00Z') });
    expect(freezeEndsAt(window, at('2026-12-19T23:59:59Z'))).toBeNull();
    expect(freezeEndsAt(window, at('2026-12-20T00:00:00Z'))).toEqual(at('2027-01-04T00:00:00Z'));
    expect(freezeEndsAt(window, at('2027-01-04T00:00:00Z'))).toBeNull();
  });
});

describe('activeFreezes', () => {
  it('covers only its environments and, when it names projects, only those', () => {
    const now = at('2026-12-24T12:00:00Z');
    const window = { startUtc: at('2026-12-20T00:00:00Z'), endUtc: at('2027-01-04T00:00:00Z') };
    const all = freeze({ ...window, name: 'All projects' });
    const some = freeze({ ...window, name: 'Checkout only', projectIds: ['checkout'] });
    const names = (projectId: string, environmentId: string) =>
      activeFreezes([all, some], projectId, environmentId, now).map((f) => f.freeze.name);
    expect(names('checkout', 'prod')).toEqual(['All projects', 'Checkout only']);
    expect(names('search', 'prod')).toEqual(['All projects']);
    expect(names('checkout', 'staging')).toEqual([]);
  });
});

describe('parseCron', () => {
  it('reads steps, ranges and lists, with 7 as Sunday', () => {
    const [minutes, hours, , , weekdays] = parseCron('*/15 9-17 * * 1-5,7');
    expect([...minutes]).toEqual([0, 15, 30, 45]);
    expect([...hours]).toEqual([9, 10, 11, 12, 13, 14, 15, 16, 17]);
    expect([...weekdays].sort()).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('names the field that is wrong', () => {
    expect(() => parseCron('* * *')).toThrow(/five fields/);
    expect(() => parseCron('0 24 * * *')).toThrow(/hour field '24' is out of range 0-23/);
    expect(() => parseCron('0 12 * * mon')).toThrow(/day of week field 'mon' is not valid/);
  });
});
