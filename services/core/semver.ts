/**
 * Semantic Versioning 2.0.0, exactly (api-spec §9). node-semver alone is too lenient: it strips a
 * leading `v`, trims spaces and drops build metadata (stack-notes §6), so validity is decided on
 * the RAW string by the semver.org regex, and node-semver is used only for precedence. Versions are
 * stored and returned exactly as written, build metadata included.
 */
import semver from 'semver';

/** The regex published at https://semver.org/#is-there-a-suggested-regular-expression-regex-to-check-a-semver-string */
const SEMVER_2 =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** A 1- or 2-part numeric version (`6`, `6.1`): what §9's SemVer-equivalent lookups expand. */
const SHORT_NUMERIC = /^(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?$/;

/**
 * True when `raw` is valid SemVer 2.0.0 as written. Also requires node-semver to parse it, which
 * refuses numeric parts above 2^53−1 and strings over 256 characters: such versions could not be
 * compared exactly, so we refuse them rather than mis-order them.
 */
export function isValidSemVer(raw: string): boolean {
  return SEMVER_2.test(raw) && semver.parse(raw) !== null;
}

function parsed(raw: string): semver.SemVer {
  const version = isValidSemVer(raw) ? semver.parse(raw) : null;
  if (!version) throw new Error(`Not a SemVer 2.0.0 version: '${raw}'`);
  return version;
}

/**
 * SemVer precedence (§11): negative when a < b, 0 when equal, positive when a > b. Build
 * metadata is ignored, so `1.0.0+a` and `1.0.0+b` compare equal. Throws on invalid input:
 * callers validate first.
 */
export function compareSemVer(a: string, b: string): number {
  return semver.compare(parsed(a), parsed(b));
}

/** The highest version by precedence (the first written among equals), or null for an empty list. */
export function maxSemVer(versions: readonly string[]): string | null {
  let best: string | null = null;
  for (const v of versions) if (best === null || compareSemVer(v, best) > 0) best = v;
  return best;
}

/** Sorts highest precedence first; equal precedence keeps a deterministic order by build metadata. */
export function sortSemVerDescending(versions: readonly string[]): string[] {
  return [...versions].sort((a, b) => semver.compareBuild(parsed(b), parsed(a)));
}

/** True when a and b have the same precedence (build metadata ignored). */
export function semverEqual(a: string, b: string): boolean {
  return compareSemVer(a, b) === 0;
}

/** The query as a full SemVer string (`6.1` → `6.1.0`), or null when it is neither short nor valid. */
export function expandQuery(query: string): string | null {
  if (isValidSemVer(query)) return query;
  const short = SHORT_NUMERIC.exec(query);
  if (!short) return null;
  const expanded = `${short[1]}.${short[2] ?? '0'}.0`;
  return isValidSemVer(expanded) ? expanded : null;
}
