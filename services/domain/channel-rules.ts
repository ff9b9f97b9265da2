/**
 * Channel version rules (contract §3): a node-semver range plus a regex on the pre-release part.
 * Pure functions: channels validate rules with them, releases filter versions with them.
 */
import semver from 'semver';
import { isValidSemVer } from '../core/semver.ts';

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

/** The compiled pre-release pattern, or null when it does not compile as a JavaScript RegExp. */
export function compilePreReleaseTag(tag: string): RegExp | null {
  if (tag.length > MAX_PRE_RELEASE_TAG_LENGTH) return null;
  try {
    return new RegExp(tag);
  } catch {
    return null;
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
    if (!pattern || !pattern.test(parsed.prerelease.join('.'))) return false;
  }
  if (rule.versionRange !== null && rule.versionRange.trim() !== '') {
    if (!isValidVersionRange(rule.versionRange)) return false;
    return semver.satisfies(parsed, rule.versionRange, { includePrerelease: true });
  }
  return true;
}
