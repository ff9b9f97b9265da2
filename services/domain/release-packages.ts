/**
 * Which package versions a release freezes (spec §4.1 rules 3–4, contract §3 channels): versions
 * the caller names are checked (a package of the project, valid SemVer, in the store, within the
 * channel's package rule); every other package takes its highest SemVer version in the store at
 * request time among those the channel's package rule allows.
 */
import { InvalidParameterError, type SnapshotPackage, type ValidationError } from '../core/index.ts';
import { isValidSemVer, maxSemVer } from '../core/index.ts';
import type { Channel } from '../store/index.ts';
import type { PackagesStore, StoredPackage } from '../store/index.ts';
import { versionSatisfiesChannel, type VersionRule } from './channel-rules.ts';

/** A package the project's steps reference, under the spelling the release uses for it. */
export interface ProjectPackage {
  packageId: string;
  /** True when some enabled step references it; packages of disabled steps only never block a release. */
  required: boolean;
}

const NO_RULE: VersionRule = { versionRange: null, preReleaseTag: null };

function ruleFor(channel: Channel | null, packageId: string): VersionRule {
  const key = packageId.toLowerCase();
  return channel?.packageRules.find((r) => r.packageId.toLowerCase() === key) ?? NO_RULE;
}

function describeRule(rule: VersionRule): string {
  const parts = [
    rule.versionRange ? `range '${rule.versionRange}'` : null,
    rule.preReleaseTag ? `pre-release tag '${rule.preReleaseTag}'` : null,
  ];
  return parts.filter((p) => p !== null).join(' and ');
}

function toSnapshot(packageId: string, stored: StoredPackage): SnapshotPackage {
  return { packageId, version: stored.version, sha256: stored.sha256, sizeBytes: stored.sizeBytes, type: stored.type };
}

/**
 * A requested version matches a stored one by SemVer precedence (the store holds at most one per
 * precedence). When the request carries build metadata it must also be the stored build: `1.0.0+b`
 * never silently stands for an uploaded `1.0.0+a`.
 */
async function findRequested(
  packages: PackagesStore,
  workspaceId: string,
  packageId: string,
  version: string,
): Promise<StoredPackage | null> {
  const stored = await packages.findByPrecedence(workspaceId, packageId, version);
  if (!stored) return null;
  if (version.includes('+') && stored.version !== version) return null;
  return stored;
}

export async function choosePackageVersions(input: {
  packages: PackagesStore;
  workspaceId: string;
  projectPackages: readonly ProjectPackage[];
  requested: Readonly<Record<string, string>>;
  channel: Channel | null;
}): Promise<SnapshotPackage[]> {
  const { packages, workspaceId, projectPackages, channel } = input;
  const byKey = new Map(projectPackages.map((p) => [p.packageId.toLowerCase(), p]));
  const errors: ValidationError[] = [];
  const chosen = new Map<string, SnapshotPackage>();
  // Lower-cased IDs the caller named (package IDs are case-insensitive).
  const named = new Set<string>();
  const fail = (packageId: string, message: string) =>
    errors.push({ property: `packageVersions.${packageId}`, messages: [message] });

  for (const [packageId, version] of Object.entries(input.requested)) {
    const key = packageId.toLowerCase();
    const project = byKey.get(key);
    if (!project) {
      fail(packageId, `'${packageId}' is not a package of the project`);
      continue;
    }
    if (named.has(key)) {
      fail(packageId, `'${packageId}' is given more than once`);
      continue;
    }
    named.add(key);
    if (!isValidSemVer(version)) {
      fail(packageId, `'${version}' is not a valid SemVer 2.0.0 version`);
      continue;
    }
    const rule = ruleFor(channel, project.packageId);
    if (!versionSatisfiesChannel(version, rule)) {
      fail(
        packageId,
        `version '${version}' does not satisfy the ${describeRule(rule)} of channel '${channel?.name ?? ''}'`,
      );
      continue;
    }
    const stored = await findRequested(packages, workspaceId, project.packageId, version);
    if (!stored) {
      fail(packageId, `version '${version}' of '${packageId}' is not in the package store`);
      continue;
    }
    chosen.set(project.packageId, toSnapshot(project.packageId, stored));
  }

  for (const project of projectPackages) {
    if (named.has(project.packageId.toLowerCase())) continue;
    const rule = ruleFor(channel, project.packageId);
    const candidates = (await packages.list(workspaceId, project.packageId)).filter((p) =>
      versionSatisfiesChannel(p.version, rule),
    );
    const best = maxSemVer(candidates.map((p) => p.version));
    const stored = candidates.find((p) => p.version === best);
    if (stored) chosen.set(project.packageId, toSnapshot(project.packageId, stored));
    else if (project.required) {
      const within =
        rule === NO_RULE ? '' : ` satisfying the ${describeRule(rule)} of channel '${channel?.name ?? ''}'`;
      fail(project.packageId, `no version of package '${project.packageId}'${within} is in the package store`);
    }
  }

  if (errors.length > 0) {
    throw new InvalidParameterError(
      `Invalid package versions: ${errors.map((e) => e.messages.join('; ')).join('; ')}`,
      errors,
    );
  }
  // In the project's order (the order its steps first reference each package).
  return projectPackages.flatMap((p) => {
    const pkg = chosen.get(p.packageId);
    return pkg ? [pkg] : [];
  });
}
