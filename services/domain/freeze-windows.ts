/**
 * When a deployment freeze holds (issue #15): a single window [start, end), or a recurrence — a
 * five-field cron expression (minute hour day-of-month month day-of-week, in `timeZone`) naming
 * when each window starts, each lasting `durationMinutes`. Pure: no clock, no I/O.
 */
import { InvalidParameterError } from '../core/index.ts';
import type { DeploymentFreeze, FreezeRecurrence } from '../store/index.ts';

/** A recurring window lasts at most a week: finding the one in force looks back that far, minute by minute at worst. */
export const MAX_RECURRENCE_MINUTES = 7 * 24 * 60;

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const;

type CronSets = [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];

/** Parses `*`, `*\/n`, `a`, `a-b`, `a-b/n` and comma lists per field; throws a message naming the bad field. */
export function parseCron(expression: string): CronSets {
  const parts = expression.trim().split(/\s+/);
  if (parts.length !== 5)
    throw new Error('a cron expression has five fields: minute hour day-of-month month day-of-week');
  return parts.map((part, index) => {
    const field = FIELDS[index]!;
    const values = new Set<number>();
    for (const item of part.split(',')) {
      const match = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(item);
      if (!match) throw new Error(`the ${field.name} field '${part}' is not valid`);
      const from = match[1] === '*' ? field.min : Number(match[2]);
      const to = match[1] === '*' ? field.max : match[3] !== undefined ? Number(match[3]) : match[4] ? field.max : from;
      const step = match[4] ? Number(match[4]) : 1;
      if (from < field.min || to > field.max || from > to || step < 1)
        throw new Error(`the ${field.name} field '${part}' is out of range ${field.min}-${field.max}`);
      for (let v = from; v <= to; v += step) values.add(index === 4 && v === 7 ? 0 : v);
    }
    return values;
  }) as CronSets;
}

/** Throws 400 when the time zone is not one this runtime knows. */
export function checkTimeZone(timeZone: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new InvalidParameterError(`Unknown time zone '${timeZone}'`, [
      { property: 'recurrence.timeZone', messages: ['an IANA time zone such as Europe/Berlin or UTC'] },
    ]);
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    });
    formatters.set(timeZone, formatter);
  }
  return formatter;
}

/** Offsets change only at quarter hours in every real zone: one look-up per quarter hour. */
const QUARTER_MS = 15 * 60_000;

/** Minutes the zone's wall clock is ahead of UTC at `at` (a quarter hour). */
function offsetMinutes(timeZone: string, at: number): number {
  const parts: Record<string, number> = {};
  for (const part of formatterOf(timeZone).formatToParts(new Date(at))) parts[part.type] = Number(part.value);
  const wall = Date.UTC(parts.year!, parts.month! - 1, parts.day, parts.hour, parts.minute);
  return Math.round((wall - at) / 60_000);
}

/**
 * Whether the cron matches the minute starting at `at` (between `from` and `to`, at most a week
 * apart) on the zone's wall clock. Within a week a zone changes its offset at most once, so when
 * both ends have the same offset it holds throughout; otherwise it is looked up per quarter hour.
 */
function matcher(sets: CronSets, timeZone: string, from: number, to: number): (at: number) => boolean {
  const offsets = new Map<number, number>();
  const first = offsetMinutes(timeZone, Math.floor(from / QUARTER_MS) * QUARTER_MS);
  const constant = first === offsetMinutes(timeZone, Math.floor(to / QUARTER_MS) * QUARTER_MS) ? first : null;
  const [minutes, hours, days, months, weekdays] = sets;
  return (at) => {
    const quarter = Math.floor(at / QUARTER_MS) * QUARTER_MS;
    let offset = constant ?? offsets.get(quarter);
    if (offset === undefined) {
      offset = offsetMinutes(timeZone, quarter);
      offsets.set(quarter, offset);
    }
    // The wall-clock fields, read with UTC getters from the instant shifted by the offset.
    const wall = new Date(at + offset * 60_000);
    return (
      minutes.has(wall.getUTCMinutes()) &&
      hours.has(wall.getUTCHours()) &&
      days.has(wall.getUTCDate()) &&
      months.has(wall.getUTCMonth() + 1) &&
      weekdays.has(wall.getUTCDay())
    );
  };
}

const MINUTE_MS = 60_000;

/** The end of the recurring window in force at `now`, or null when none is. */
function recurringEnd(recurrence: FreezeRecurrence, now: Date): Date | null {
  const latestStart = Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS;
  const earliestStart = latestStart - (recurrence.durationMinutes - 1) * MINUTE_MS;
  const matches = matcher(parseCron(recurrence.cron), recurrence.timeZone, earliestStart, latestStart);
  // The latest start within the last durationMinutes: its window ends last of those that hold now.
  for (let back = 0; back < recurrence.durationMinutes; back++) {
    const start = latestStart - back * MINUTE_MS;
    if (matches(start)) {
      const end = start + recurrence.durationMinutes * MINUTE_MS;
      if (end > now.getTime()) return new Date(end);
    }
  }
  return null;
}

/** When the freeze's window in force at `now` ends, or null when it does not hold now. */
export function freezeEndsAt(
  freeze: Pick<DeploymentFreeze, 'startUtc' | 'endUtc' | 'recurrence'>,
  now: Date,
): Date | null {
  if (freeze.recurrence) return recurringEnd(freeze.recurrence, now);
  if (!freeze.startUtc || !freeze.endUtc) return null;
  return freeze.startUtc <= now && now < freeze.endUtc ? freeze.endUtc : null;
}

/** Whether the freeze covers a deployment of this project to this environment (not when). */
export function freezeCovers(
  freeze: Pick<DeploymentFreeze, 'environmentIds' | 'projectIds'>,
  projectId: string,
  environmentId: string,
): boolean {
  return (
    freeze.environmentIds.includes(environmentId) &&
    (freeze.projectIds.length === 0 || freeze.projectIds.includes(projectId))
  );
}

/** The freezes holding a deployment of this project to this environment at `now`, with their ends. */
export function activeFreezes(
  freezes: readonly DeploymentFreeze[],
  projectId: string,
  environmentId: string,
  now: Date,
): Array<{ freeze: DeploymentFreeze; endsAt: Date }> {
  return freezes.flatMap((freeze) => {
    if (!freezeCovers(freeze, projectId, environmentId)) return [];
    const endsAt = freezeEndsAt(freeze, now);
    return endsAt ? [{ freeze, endsAt }] : [];
  });
}
