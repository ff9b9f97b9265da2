/**
 * Releases (spec §2.1, §4.1, §9; contract §4): an immutable snapshot of a project — package
 * versions, steps, variables and lifecycle — taken in one transaction at creation. Reads find a
 * release by ID or by SemVer-equivalent version and report its lifecycle progression.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
  type ReleaseSnapshot,
  type SnapshotStepTemplate,
} from '../core/index.ts';
import { expandQuery, isValidSemVer, semverEqual, sortSemVerDescending } from '../core/index.ts';
import type { Release, ReleaseInputs, Store } from '../store/index.ts';
import type { Channel } from '../store/index.ts';
import type { Project } from '../store/index.ts';
import { versionSatisfiesChannel } from './channel-rules.ts';
import type { DomainDeps } from './deps.ts';
import { idempotent, type RememberAnswer } from './idempotency.ts';
import { computeProgression, type Progression } from './lifecycle-progression.ts';
import { lifecycleReadModel } from './lifecycles.ts';
import { visibleProject } from './projects.ts';
import { choosePackageVersions, type ProjectPackage } from './release-packages.ts';
import {
  lifecycleSnapshot,
  packageReferences,
  rollingGroupSnapshots,
  stepProperties,
  stepSnapshot,
  templateSnapshot,
  variableSnapshots,
} from './release-snapshot-builder.ts';
import { visibleWithOrganization } from './scope.ts';

export interface CreateReleaseInput {
  projectId: string;
  version: string;
  channelName?: string | null | undefined;
  ignoreDefaultChannel?: boolean | null | undefined;
  notes?: string | null | undefined;
  packageVersions?: Record<string, string> | null | undefined;
}

function invalid(property: string, message: string): InvalidParameterError {
  return new InvalidParameterError(message, [{ property, messages: [message] }]);
}

/**
 * Spec §4.1 rules 1–2: a named channel (unknown → 400); else the default channel unless
 * ignoreDefaultChannel; else none. A project with channels but no default gets no channel.
 * `found` is what the snapshot read found under those rules.
 */
function checkChannel(input: CreateReleaseInput, found: Channel | null): Channel | null {
  const name = input.channelName?.trim();
  if (name && !found) throw invalid('channelName', `Channel '${name}' is not a channel of the project`);
  if (found && !versionSatisfiesChannel(input.version, found)) {
    const rules = [
      found.versionRange ? `range '${found.versionRange}'` : null,
      found.preReleaseTag ? `pre-release tag '${found.preReleaseTag}'` : null,
    ];
    throw invalid(
      'version',
      `Release version '${input.version}' does not satisfy the ${rules.filter((r) => r !== null).join(' and ')} of channel '${found.name}'`,
    );
  }
  return found;
}

/** Refuses a version already used, exactly or by SemVer precedence (`1.0.0+a` vs `1.0.0+b`), so lookups stay unambiguous. */
function checkVersionUnused(version: string, candidates: ReleaseInputs['versionClashes']): void {
  const clash = candidates.find(
    (r) => r.version === version || (isValidSemVer(r.version) && semverEqual(r.version, version)),
  );
  if (clash)
    throw invalid(
      'version',
      `Release version '${version}' already exists in the project${clash.version === version ? '' : ` as '${clash.version}'`}`,
    );
}

async function takeSnapshot(
  store: Store,
  project: Project,
  channel: Channel | null,
  inputs: ReleaseInputs,
  requested: Record<string, string>,
): Promise<ReleaseSnapshot> {
  const { steps } = inputs;
  const templates = new Map<string, SnapshotStepTemplate>();
  for (const templateId of new Set(steps.map((s) => s.stepTemplateId))) {
    const template = inputs.templates.get(templateId);
    if (!template)
      throw new InvalidParameterError(
        `A step of the project uses a step template that no longer exists (${templateId})`,
      );
    templates.set(templateId, templateSnapshot(template));
  }
  const templateOf = (templateId: string): SnapshotStepTemplate => templates.get(templateId)!;

  // The project's packages (contract §3), first spelling wins; required when an enabled step uses it.
  const packages = new Map<string, ProjectPackage>();
  for (const step of steps) {
    const template = templateOf(step.stepTemplateId);
    for (const packageId of packageReferences(template, stepProperties(template, step.propertiesJson))) {
      const known = packages.get(packageId.toLowerCase());
      if (known) known.required ||= !step.disabled;
      else packages.set(packageId.toLowerCase(), { packageId, required: !step.disabled });
    }
  }
  const canonical = (packageId: string) => packages.get(packageId.toLowerCase())?.packageId ?? packageId;

  const lifecycle = inputs.lifecycle ? lifecycleReadModel(inputs.lifecycle.lifecycle, inputs.lifecycle.phases) : null;
  return {
    v: 1,
    project: { projectId: project.id, name: project.name, workspaceId: project.workspaceId },
    channel: channel ? { channelId: channel.id, name: channel.name } : null,
    lifecycle: lifecycleSnapshot(lifecycle),
    packages: await choosePackageVersions({
      packages: store.packages,
      workspaceId: project.workspaceId,
      projectPackages: [...packages.values()],
      requested,
      channel,
    }),
    steps: steps.map((s) => stepSnapshot(s, templateOf(s.stepTemplateId), canonical)),
    rollingGroups: rollingGroupSnapshots(inputs.rollingGroups, steps),
    variables: variableSnapshots(inputs.variables),
    scriptModules: inputs.scriptModules.map((m) => ({
      scriptModuleId: m.id,
      name: m.name,
      script: m.script,
      scriptLanguage: m.scriptLanguage,
    })),
  };
}

export async function createRelease(
  deps: DomainDeps,
  principal: Principal,
  input: CreateReleaseInput,
  options: { idempotencyKey?: string | undefined } = {},
): Promise<{ releaseId: string }> {
  const request = { operation: 'release.create', key: options.idempotencyKey, body: input };
  return idempotent(deps, principal, request, (remember) => insertRelease(deps, principal, input, remember));
}

async function insertRelease(
  deps: DomainDeps,
  principal: Principal,
  input: CreateReleaseInput,
  remember: RememberAnswer<{ releaseId: string }>,
): Promise<{ releaseId: string }> {
  const releaseId = newId();
  const created = await deps.store.transaction(async (tx): Promise<Release> => {
    // The project's lock, its visibility and everything else the snapshot needs, in one statement
    // (store/release-inputs.ts). The lock serializes releases of the project (version uniqueness
    // by precedence) and step-list edits (a consistent snapshot).
    const { project: locked, inputs } = await tx.releaseInputs.lockProjectAndRead({
      projectId: input.projectId,
      version: input.version,
      channelName: input.channelName?.trim() || null,
      ignoreDefaultChannel: input.ignoreDefaultChannel === true,
    });
    const project = await visibleWithOrganization(principal, locked, 'projectId');
    authorize(principal, Capability.CreateRelease, { projectId: project.id });
    // Validity is decided on the raw string: `v1.2.3` or ` 1.2.3` are refused, never coerced.
    if (!isValidSemVer(input.version))
      throw invalid('version', `Release version '${input.version}' is not a valid SemVer 2.0.0 version`);
    checkVersionUnused(input.version, inputs.versionClashes);
    const channel = checkChannel(input, inputs.channel);
    const snapshot = await takeSnapshot(tx, project, channel, inputs, input.packageVersions ?? {});
    const release = {
      id: releaseId,
      workspaceId: project.workspaceId,
      projectId: project.id,
      version: input.version,
      channelId: channel?.id ?? null,
      channelName: channel?.name ?? null,
      notes: input.notes ?? null,
      packageVersions: Object.fromEntries(snapshot.packages.map((p) => [p.packageId, p.version])),
      snapshot,
    };
    const createdUtc = await tx.releases.insertUnlessVersionTaken(release);
    // Taken by a release create that committed while this one waited for the lock.
    if (createdUtc === null) {
      checkVersionUnused(input.version, await tx.releases.equivalents(project.id, input.version));
      throw invalid('version', `Release version '${input.version}' already exists in the project`);
    }
    await remember(tx, { releaseId });
    // The snapshot as a read would give it back (a JSON round trip), without reading it.
    return { ...release, snapshot: JSON.parse(JSON.stringify(snapshot)) as Release['snapshot'], createdUtc };
  });

  if (deps.onReleaseCreated) {
    // The release exists whatever happens next: a failure to start automatic deployments must not
    // turn a committed release into an error answer (a retry would then hit "version exists").
    // The hook is expected to log its own failures.
    await deps.onReleaseCreated(created).catch(() => undefined);
  }
  return { releaseId };
}

export async function listReleases(
  deps: DomainDeps,
  principal: Principal,
  query: { projectId: string } & PageRequest,
): Promise<Paged<Release>> {
  const project = await visibleProject(deps, principal, query.projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  return deps.store.releases.list(project.id, toPage(query));
}

export interface ReleaseDetails {
  release: Release;
  progression: Progression;
}

/** Spec §9: `6.1` finds `6.1.0`; an exact spelling wins; among equivalents the highest. */
async function findByEquivalentVersion(deps: DomainDeps, projectId: string, version: string): Promise<Release | null> {
  const exact = await deps.store.releases.findByVersion(projectId, version);
  if (exact) return exact;
  if (expandQuery(version) === null) throw invalid('version', `'${version}' is not a SemVer 2.0.0 version`);
  const id = await highestEquivalentRelease(deps, projectId, version);
  return id ? deps.store.releases.get(id) : null;
}

/**
 * The ID of the highest release SemVer-equivalent to `query` (spec §9: `6.1` finds `6.1.0`; among
 * equivalents, which differ by build metadata, the highest), or null (also for a query that is
 * not a version).
 */
export async function highestEquivalentRelease(
  deps: DomainDeps,
  projectId: string,
  query: string,
): Promise<string | null> {
  const expanded = expandQuery(query);
  if (expanded === null) return null;
  const matches = await deps.store.releases.equivalents(projectId, expanded);
  const best = sortSemVerDescending(matches.map((m) => m.version))[0];
  return matches.find((m) => m.version === best)?.id ?? null;
}

export async function getReleaseDetails(
  deps: DomainDeps,
  principal: Principal,
  query: { releaseId?: string | undefined; projectId?: string | undefined; version?: string | undefined },
): Promise<ReleaseDetails> {
  let release: Release;
  if (query.releaseId !== undefined) {
    release = await visibleWithOrganization(
      principal,
      deps.store.releases.getWithOrganization(query.releaseId),
      'releaseId',
    );
    if (query.projectId !== undefined && query.projectId !== release.projectId) throw unknownId('releaseId');
  } else if (query.projectId !== undefined && query.version !== undefined) {
    const project = await visibleProject(deps, principal, query.projectId);
    authorize(principal, Capability.View, { projectId: project.id });
    const found = await findByEquivalentVersion(deps, project.id, query.version);
    if (!found) throw invalid('version', `Release version '${query.version}' not found in the project`);
    release = found;
  } else {
    throw new InvalidParameterError('Give releaseId, or projectId and version', [
      { property: query.projectId === undefined ? 'releaseId' : 'version', messages: ['required'] },
    ]);
  }
  authorize(principal, Capability.View, { projectId: release.projectId });

  const [environments, history] = await Promise.all([
    deps.store.environments.listAll(release.workspaceId),
    deps.store.deployments.releaseHistory(release.id),
  ]);
  const progression = computeProgression(
    release.snapshot.lifecycle,
    environments.map((e) => ({ environmentId: e.id, name: e.name, enabled: e.enabled })),
    history.completions,
  );
  return { release, progression };
}
