/** Pure pieces of the CLI: durations, --package pairs, name-or-ID lookup, step × machine prefixes. */
import { describe, expect, it } from 'vitest';
import { parsePackageVersions } from '../../cli/commands/release-create.ts';
import type { LogItem } from '../../cli/deployment-types.ts';
import { parseDuration } from '../../cli/duration.ts';
import { UsageError } from '../../cli/exit-codes.ts';
import { LogLines } from '../../cli/log-lines.ts';
import { findByNameOrId, idsToNames } from '../../cli/resolve.ts';

describe('parseDuration', () => {
  it('reads seconds, units and combinations', () => {
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('2s')).toBe(2000);
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('1.5m')).toBe(90_000);
  });

  it('refuses anything else as bad usage', () => {
    for (const bad of ['', 'soon', '5 minutes', '10x', '1h 30m', '-5s'])
      expect(() => parseDuration(bad)).toThrow(UsageError);
  });
});

describe('parsePackageVersions', () => {
  it('splits at the last colon', () => {
    expect(parsePackageVersions(['Web.App:1.2.3', 'Db:2.0.0-beta.1'])).toEqual({
      'Web.App': '1.2.3',
      Db: '2.0.0-beta.1',
    });
    expect(parsePackageVersions([])).toBeUndefined();
  });

  it('refuses a pair without an ID or a version', () => {
    for (const bad of ['Web.App', ':1.0.0', 'Web.App:']) expect(() => parsePackageVersions([bad])).toThrow(UsageError);
  });
});

describe('findByNameOrId', () => {
  const items = [
    { id: 'e1', name: 'Staging' },
    { id: 'e2', name: 'staging' },
    { id: 'e3', name: 'Production' },
  ];
  const find = (value: string) =>
    findByNameOrId(
      items,
      value,
      (i) => i.id,
      (i) => i.name,
    );

  it('prefers an ID, then the exact name, then the name ignoring case', () => {
    expect(find('e3').found?.id).toBe('e3');
    expect(find('Staging').found?.id).toBe('e1');
    expect(find('PRODUCTION').found?.id).toBe('e3');
  });

  it('reports an ambiguous name instead of guessing, and nothing for an unknown one', () => {
    expect(find('STAGING')).toEqual({ found: null, ambiguous: [items[0], items[1]] });
    expect(find('Test')).toEqual({ found: null, ambiguous: [] });
  });

  it('maps IDs to names, and says when none was an ID', () => {
    expect(
      idsToNames(
        ['e3', 'Staging'],
        items,
        (i) => i.id,
        (i) => i.name,
      ),
    ).toEqual(['Production', 'Staging']);
    expect(
      idsToNames(
        ['Staging'],
        items,
        (i) => i.id,
        (i) => i.name,
      ),
    ).toBeNull();
  });
});

describe('LogLines', () => {
  let tick = 638590487604430000n;
  const item = (
    Id: string,
    Data: string,
    StepId: string | null,
    ParentLogId: string | null,
    LogLevel = 'Information',
  ) =>
    ({
      Id,
      Data,
      StepId,
      ParentLogId,
      LogLevel,
      CreatedUtcTick: String(tick++),
      CreatedUtc: '',
      CreatedLocalTime: null,
      DeploymentId: 'd',
      DeploymentMonitorId: null,
      ErrorCount: 0,
      WarningCount: 0,
      ExceptionData: null,
    }) satisfies LogItem;

  it('prefixes lines by step and machine from the parent entries, and keeps each target’s last lines', () => {
    const lines = new LogLines();
    const shown = [
      item('l1', 'Validating the deployment', null, null),
      item('l2', "Deploying release to 'Staging'", null, null),
      item('d.s1', "Step 'Run it'", 's1', null),
      item('t1', "Running 'Run it' on web 1", 's1', 'd.s1'),
      item('t2', "Running 'Run it' on web-2", 's1', 'd.s1'),
      item('l3', 'hello', 's1', 't1'),
      item('l4', 'oops', 's1', 't2', 'Error'),
      item('l5', 'Run it on web-3: skipped', 's1', 'd.s1'),
    ].map((i) => lines.add(i));
    expect(shown.map((l) => `${l.prefix} ${l.text}`.trim())).toEqual([
      'Validating the deployment',
      "Deploying release to 'Staging'",
      "[Run it] Step 'Run it'",
      "[Run it @ web 1] Running 'Run it' on web 1",
      "[Run it @ web-2] Running 'Run it' on web-2",
      '[Run it @ web 1] hello',
      '[Run it @ web-2] oops',
      '[Run it] Run it on web-3: skipped',
    ]);
    expect(lines.environmentName).toBe('Staging');
    expect(lines.tail('Run it', 'web-2').map((l) => l.Data)).toEqual(['oops']);
    expect(lines.errors.map((l) => l.Data)).toEqual(['oops']);
  });
});
