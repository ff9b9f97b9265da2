/**
 * Channel version rules (contract §3): a node-semver range plus a regex on the pre-release part.
 * Pure functions: channels validate rules with them, releases filter versions with them.
 */
import { RE2JS } from 're2js';
import semver from 'semver';
import { BoundedCache } from '../core/index.ts';
import { isValidSemVer } from '../core/index.ts';

/** A rule as stored on a channel or on one of its package rules; null means "no constraint". */
export interface VersionRule {
  versionRange: string | null;
  preReleaseTag: string | null;
}

/**
 * A pattern longer than this is refused. Together with the short pre-release strings it runs
 * against (node-semver caps versions at 256 characters), it keeps a pathological pattern cheap.
 */
export const MAX_PRE_RELEASE_TAG_LENGTH = 200;
export const MAX_VERSION_RANGE_LENGTH = 500;

/** True when `range` is a node-semver range (`semver.validRange`), `*`, or a plain version. */
export function isValidVersionRange(range: string): boolean {
  if (range.length > MAX_VERSION_RANGE_LENGTH) return false;
  try {
    return semver.validRange(range, { includePrerelease: true }) !== null;
  } catch {
    return false;
  }
}

/** A pre-release pattern ready to run, or why it was refused. */
export type PreReleasePattern = { ok: true; test(preRelease: string): boolean } | { ok: false; reason: string };

const compiled = new BoundedCache<PreReleasePattern>(1_000);

/**
 * Compiles a channel's pre-release pattern for a linear-time engine (RE2, pure JavaScript): a
 * pattern such as `^(a+)+$` runs in microseconds whatever the version, where JavaScript's
 * backtracking RegExp took seconds to hours and stalled the control plane's event loop. The
 * pattern must also be valid JavaScript syntax (what the API has always accepted); features RE2
 * cannot run in linear time (backreferences, lookaround) are refused with the reason.
 */
export function compilePreReleaseTag(tag: string): PreReleasePattern {
  const cached = compiled.get(tag);
  if (cached) return cached;
  const pattern = compile(tag);
  compiled.remember(tag, pattern);
  return pattern;
}

function compile(tag: string): PreReleasePattern {
  if (tag.length > MAX_PRE_RELEASE_TAG_LENGTH)
    return { ok: false, reason: `is longer than ${MAX_PRE_RELEASE_TAG_LENGTH} characters` };
  try {
    new RegExp(tag);
  } catch {
    return { ok: false, reason: 'is not a valid regular expression' };
  }
  try {
    const re2 = RE2JS.compile(tag);
    return { ok: true, test: (preRelease) => re2.matcher(preRelease).find() };
  } catch {
    return {
      ok: false,
      reason: 'uses a feature without a linear-time match (backreferences or lookaround are not supported)',
    };
  }
}

/**
 * True when `version` (SemVer 2.0.0) passes the rule: its pre-release part (`beta.1` of
 * `1.0.0-beta.1`, the empty string for a stable version, so `^$` means stable only) matches
 * `preReleaseTag`, and it satisfies `versionRange` with pre-releases included (plain node-semver
 * would reject every pre-release against a range without one). Invalid versions or rules never pass.
 */
export function versionSatisfiesChannel(version: string, rule: VersionRule): boolean {
  if (!isValidSemVer(version)) return false;
  const parsed = semver.parse(version);
  if (!parsed) return false;
  if (rule.preReleaseTag !== null && rule.preReleaseTag !== '') {
    const pattern = compilePreReleaseTag(rule.preReleaseTag);
    if (!pattern.ok || !pattern.test(parsed.prerelease.join('.'))) return false;
  }
  if (rule.versionRange !== null && rule.versionRange.trim() !== '') {
    if (!isValidVersionRange(rule.versionRange)) return false;
    return semver.satisfies(parsed, rule.versionRange, { includePrerelease: true });
  }
  return true;
}
