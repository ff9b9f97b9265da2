import { describe, expect, it } from 'vitest';
import {
  compilePreReleaseTag,
  isValidVersionRange,
  versionSatisfiesChannel,
} from '../../../services/domain/channel-rules.ts';

const rule = (versionRange: string | null, preReleaseTag: string | null) => ({ versionRange, preReleaseTag });

describe('versionSatisfiesChannel', () => {
  it('accepts every valid version when the rule is empty', () => {
    for (const version of ['1.0.0', '0.0.1-alpha', '2.3.4+build.7'])
      expect(versionSatisfiesChannel(version, rule(null, null))).toBe(true);
    expect(versionSatisfiesChannel('1.0.0-rc.1', rule('', ''))).toBe(true);
  });

  it('rejects versions that are not SemVer 2.0.0', () => {
    for (const version of ['v1.0.0', '1.0', '01.2.3', ' 1.2.3', 'latest'])
      expect(versionSatisfiesChannel(version, rule(null, null)), version).toBe(false);
  });

  it('keeps only stable versions when the tag is ^$', () => {
    const stable = rule(null, '^$');
    expect(versionSatisfiesChannel('1.2.3', stable)).toBe(true);
    expect(versionSatisfiesChannel('1.2.3+build.5', stable)).toBe(true);
    expect(versionSatisfiesChannel('1.2.3-beta', stable)).toBe(false);
  });

  it('tests the tag against the whole pre-release part only', () => {
    const beta = rule(null, '^beta');
    expect(versionSatisfiesChannel('1.0.0-beta.2', beta)).toBe(true);
    expect(versionSatisfiesChannel('1.0.0-alpha.beta', beta)).toBe(false);
    expect(versionSatisfiesChannel('1.0.0', beta)).toBe(false);
    expect(versionSatisfiesChannel('1.0.0-rc+beta', beta)).toBe(false);
    expect(versionSatisfiesChannel('1.0.0-x.7.z', rule(null, '^x\\.7\\.z$'))).toBe(true);
  });

  it('checks the range with pre-releases included', () => {
    expect(versionSatisfiesChannel('1.5.0', rule('>=1.0.0 <2.0.0', null))).toBe(true);
    expect(versionSatisfiesChannel('1.5.0-beta.1', rule('>=1.0.0 <2.0.0', null))).toBe(true);
    expect(versionSatisfiesChannel('2.0.0', rule('>=1.0.0 <2.0.0', null))).toBe(false);
    expect(versionSatisfiesChannel('2.0.0-rc.1', rule('^1.0.0', null))).toBe(false);
    expect(versionSatisfiesChannel('1.2.9', rule('~1.2', null))).toBe(true);
    expect(versionSatisfiesChannel('1.3.0', rule('1.2.x || 1.4.x', null))).toBe(false);
  });

  it('requires both the range and the tag when both are set', () => {
    const both = rule('^2.0.0', '^rc');
    expect(versionSatisfiesChannel('2.1.0-rc.1', both)).toBe(true);
    expect(versionSatisfiesChannel('2.1.0', both)).toBe(false);
    expect(versionSatisfiesChannel('3.0.0-rc.1', both)).toBe(false);
  });

  it('never passes a version against an invalid rule', () => {
    expect(versionSatisfiesChannel('1.0.0', rule('not a range', null))).toBe(false);
    expect(versionSatisfiesChannel('1.0.0-beta', rule(null, '(unclosed'))).toBe(false);
  });
});

describe('rule validation', () => {
  it('accepts node-semver ranges and refuses garbage', () => {
    for (const range of ['*', '1.2.3', '>=1.0.0 <2.0.0', '^1.2', '~1', '1.x || >=3.0.0-beta', '1.0.0 - 2.0.0'])
      expect(isValidVersionRange(range), range).toBe(true);
    for (const range of ['not a range', '>=>1', 'x'.repeat(501)]) expect(isValidVersionRange(range), range).toBe(false);
  });

  it('compiles JavaScript regular expressions and refuses invalid or oversized ones', () => {
    const beta = compilePreReleaseTag('^(beta|rc)');
    expect(beta.ok && beta.test('beta.1') && !beta.test('alpha')).toBe(true);
    expect(compilePreReleaseTag('[')).toEqual({ ok: false, reason: 'is not a valid regular expression' });
    expect(compilePreReleaseTag('a'.repeat(201))).toMatchObject({ ok: false });
  });

  it('refuses patterns without a linear-time match, saying why', () => {
    for (const tag of ['(a)\\1', '^(?=beta)', '(?<!x)y']) {
      expect(compilePreReleaseTag(tag), tag).toEqual({ ok: false, reason: expect.stringContaining('linear-time') });
    }
  });

  it('runs a catastrophic-backtracking pattern against a 256-character version in under a millisecond', () => {
    // A valid pre-release on which a backtracking engine needs ~2^248 steps (24 characters took 218 ms).
    const version = `1.0.0-${'a'.repeat(248)}-`;
    expect(versionSatisfiesChannel(version, rule(null, '^(a+)+$'))).toBe(false);
    const started = performance.now();
    for (let i = 0; i < 100; i++) versionSatisfiesChannel(version, rule(null, '^(a+)+$'));
    expect((performance.now() - started) / 100).toBeLessThan(1);
    expect(versionSatisfiesChannel(`1.0.0-${'a'.repeat(24)}`, rule(null, '^(a+)+$'))).toBe(true);
  });
});
