import { describe, expect, it } from 'vitest';
import {
  compareSemVer,
  expandQuery,
  isValidSemVer,
  maxSemVer,
  semverEqual,
  sortSemVerDescending,
} from '../../../services/core/semver.ts';

describe('isValidSemVer', () => {
  it.each([
    '0.0.0',
    '1.2.3',
    '10.20.30',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-0.3.7',
    '1.0.0-x.7.z.92',
    '1.0.0-x-y-z.--',
    '1.0.0+20130313144700',
    '1.0.0-beta+exp.sha.5114f85',
    '1.0.0+21AF26D3----117B344092BD',
    '2.0.0-rc.1+sha.5114f85',
    '1.2.3----RC-SNAPSHOT.12.9.1--.12+788',
    '1.0.0+build.01',
  ])('accepts %s', (raw) => {
    expect(isValidSemVer(raw)).toBe(true);
  });

  it.each([
    ['v1.2.3', 'leading v'],
    ['V1.2.3', 'leading V'],
    ['=1.2.3', 'leading ='],
    [' 1.2.3', 'leading space'],
    ['1.2.3 ', 'trailing space'],
    ['01.2.3', 'leading zero in major'],
    ['1.02.3', 'leading zero in minor'],
    ['1.2.03', 'leading zero in patch'],
    ['1.2.3-01', 'leading zero in a numeric pre-release identifier'],
    ['1.2', 'two parts'],
    ['1', 'one part'],
    ['1.2.3.4', 'four parts'],
    ['1.2.3-', 'empty pre-release'],
    ['1.2.3+', 'empty build'],
    ['1.2.3-a..b', 'empty pre-release identifier'],
    ['1.2.3-α', 'non-ASCII identifier'],
    ['', 'empty string'],
    ['9007199254740992.0.0', 'major above 2^53-1 (cannot be compared exactly)'],
    [`1.0.0-${'a'.repeat(260)}`, 'over 256 characters'],
  ])('refuses %s (%s)', (raw) => {
    expect(isValidSemVer(raw)).toBe(false);
  });
});

describe('compareSemVer', () => {
  it.each([
    ['1.10.0', '1.9.0'],
    ['1.0.0', '1.0.0-rc.1'],
    ['2.0.0', '1.99.99'],
    ['1.0.0-10', '1.0.0-2'],
    ['1.0.0-a', '1.0.0-1'],
    ['1.0.0-alpha.beta', '1.0.0-alpha.1'],
    ['1.0.0-beta.11', '1.0.0-beta.2'],
  ])('orders %s above %s', (higher, lower) => {
    expect(compareSemVer(higher, lower)).toBeGreaterThan(0);
    expect(compareSemVer(lower, higher)).toBeLessThan(0);
  });

  it('sorts the semver.org §11 precedence example exactly', () => {
    const ordered = [
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
    ];
    const shuffled = [...ordered].reverse();
    shuffled.push(shuffled.shift() as string);
    expect(sortSemVerDescending(shuffled)).toEqual([...ordered].reverse());
    for (let i = 1; i < ordered.length; i++)
      expect(compareSemVer(ordered[i] as string, ordered[i - 1] as string)).toBeGreaterThan(0);
  });

  it('ignores build metadata for precedence', () => {
    expect(compareSemVer('1.0.0+a', '1.0.0+b')).toBe(0);
    expect(semverEqual('1.0.0+20130313144700', '1.0.0')).toBe(true);
  });

  it('throws on an invalid version instead of guessing', () => {
    expect(() => compareSemVer('v1.0.0', '1.0.0')).toThrow(/SemVer/);
  });
});

describe('maxSemVer', () => {
  it('picks the SemVer maximum, not the string maximum nor the last given', () => {
    expect(maxSemVer(['1.9.0', '1.10.0', '1.2.0'])).toBe('1.10.0');
    expect(maxSemVer(['1.0.0', '1.0.0-rc.1'])).toBe('1.0.0');
    expect(maxSemVer(['1.0.0-rc.1', '1.0.0-beta.11', '1.0.0-beta.2'])).toBe('1.0.0-rc.1');
  });

  it('keeps the raw string, build metadata included', () => {
    expect(maxSemVer(['1.0.0', '1.1.0+sha.5114f85'])).toBe('1.1.0+sha.5114f85');
  });

  it('returns null for an empty list', () => {
    expect(maxSemVer([])).toBeNull();
  });
});

describe('expandQuery', () => {
  it('expands only 1- and 2-part numeric queries', () => {
    expect(expandQuery('6.1')).toBe('6.1.0');
    expect(expandQuery('1.2.3-rc.1')).toBe('1.2.3-rc.1');
    expect(expandQuery('6.1-rc')).toBeNull();
    expect(expandQuery('latest')).toBeNull();
  });
});
