/**
 * How long deciding whether a recurring deployment freeze holds takes at worst (issue #15): a
 * window of a week looked back over from just before it starts, so every minute of the week is
 * tested. Runs on every deploy request and gate check while such a freeze exists. No database.
 *
 *   npx tsx bench/governance/freeze-windows.ts
 */
import { freezeEndsAt } from '../../services/domain/index.ts';

const WEEK_MINUTES = 7 * 24 * 60;
const cases = [
  // Friday 17:00 in Berlin, an hour before the weekly window starts: the whole week is searched.
  { name: 'week look-back, one offset', now: new Date('2026-11-27T16:00:00Z') },
  // The look-back spans the end of summer time (25 October 2026): offsets per quarter hour.
  { name: 'week look-back, across a DST change', now: new Date('2026-10-30T16:00:00Z') },
];
const freeze = {
  startUtc: null,
  endUtc: null,
  recurrence: { cron: '0 18 * * 5', durationMinutes: WEEK_MINUTES - 1, timeZone: 'Europe/Berlin' },
};
const RUNS = 50;
for (const { name, now } of cases) {
  for (let i = 0; i < 5; i++) freezeEndsAt(freeze, now);
  const started = performance.now();
  for (let i = 0; i < RUNS; i++) freezeEndsAt(freeze, now);
  console.log(`${name}: ${((performance.now() - started) / RUNS).toFixed(2)} ms per check`);
}
