/**
 * Project channels (contract §3). A channel gates the versions a release (and each of its
 * packages) may have, and may bind its own lifecycle. At most one channel per project is the
 * default: marking one clears the others in the same transaction, under a lock on the project.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  unknownId,
  type Principal,
  type ValidationError,
} from '../core/index.ts';
import type { Channel, ChannelPatch, PackageRule } from '../store/index.ts';
import { compilePreReleaseTag, isValidVersionRange } from './channel-rules.ts';
import type { DomainDeps } from './deps.ts';
import { visibleProject } from './projects.ts';
import { visibleResource, withUniqueName } from './scope.ts';

export interface PackageRuleInput {
  packageId: string;
  versionRange?: string | null | undefined;
  preReleaseTag?: string | null | undefined;
}

export interface ChannelInput {
  name: string;
  description?: string | null | undefined;
  lifecycleId?: string | null | undefined;
  isDefault?: boolean | undefined;
  versionRange?: string | null | undefined;
  preReleaseTag?: string | null | undefined;
  packageRules?: PackageRuleInput[] | null | undefined;
}

/** Empty strings mean "no constraint", exactly as null does; storing null keeps one spelling. */
function orNull(value: string | null | undefined): string | null | undefined {
  return value === undefined ? undefined : value === null || value.trim() === '' ? null : value;
}

/** Collects rule errors for one rule, naming properties under `prefix`. */
function checkRule(
  rule: { versionRange?: string | null | undefined; preReleaseTag?: string | null | undefined },
  prefix: string,
  errors: ValidationError[],
): void {
  const range = orNull(rule.versionRange);
  if (range && !isValidVersionRange(range))
    errors.push({ property: `${prefix}versionRange`, messages: [`'${range}' is not a valid SemVer range`] });
  const tag = orNull(rule.preReleaseTag);
  const pattern = tag ? compilePreReleaseTag(tag) : null;
  if (pattern && !pattern.ok) errors.push({ property: `${prefix}preReleaseTag`, messages: [pattern.reason] });
}

/** Validates the version rules sent and returns them normalized (undefined = not sent). */
function versionRules(
  input: Partial<ChannelInput>,
): Pick<ChannelPatch, 'versionRange' | 'preReleaseTag' | 'packageRules'> {
  const errors: ValidationError[] = [];
  checkRule(input, '', errors);
  const seen = new Set<string>();
  (input.packageRules ?? []).forEach((rule, index) => {
    const key = rule.packageId.toLowerCase();
    if (seen.has(key))
      errors.push({
        property: `packageRules[${index}].packageId`,
        messages: [`'${rule.packageId}' has more than one rule`],
      });
    seen.add(key);
    checkRule(rule, `packageRules[${index}].`, errors);
  });
  const [first] = errors;
  if (first) throw new InvalidParameterError(`Invalid ${first.property}: ${first.messages.join('; ')}`, errors);
  const rules = input.packageRules === undefined ? undefined : (input.packageRules ?? []);
  return {
    versionRange: orNull(input.versionRange),
    preReleaseTag: orNull(input.preReleaseTag),
    packageRules: rules?.map((r): PackageRule => ({
      packageId: r.packageId,
      versionRange: orNull(r.versionRange) ?? null,
      preReleaseTag: orNull(r.preReleaseTag) ?? null,
    })),
  };
}

async function checkLifecycle(
  deps: DomainDeps,
  workspaceId: string,
  lifecycleId: string | null | undefined,
): Promise<void> {
  if (lifecycleId === undefined || lifecycleId === null) return;
  const lifecycle = await deps.store.lifecycles.get(lifecycleId);
  if (!lifecycle || lifecycle.workspaceId !== workspaceId) throw unknownId('lifecycleId');
}

async function visibleChannel(deps: DomainDeps, principal: Principal, channelId: string): Promise<Channel> {
  return visibleResource(deps, principal, deps.store.channels.get(channelId), 'channelId');
}

export async function listChannels(
  deps: DomainDeps,
  principal: Principal,
  projectId: string,
): Promise<{ projectId: string; channels: Channel[] }> {
  const project = await visibleProject(deps, principal, projectId);
  authorize(principal, Capability.View, { projectId: project.id });
  return { projectId: project.id, channels: await deps.store.channels.listByProject(project.id) };
}

export async function createChannel(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string } & ChannelInput,
): Promise<{ channelId: string }> {
  const project = await visibleProject(deps, principal, input.projectId);
  authorize(principal, Capability.EditProject, { projectId: project.id });
  const rules = versionRules(input);
  await checkLifecycle(deps, project.workspaceId, input.lifecycleId);
  const channelId = newId();
  const isDefault = input.isDefault ?? false;
  await withUniqueName('name', input.name, () =>
    deps.store.transaction(async (tx) => {
      await tx.channels.lockProject(project.id);
      if (isDefault) await tx.channels.clearDefault(project.id);
      await tx.channels.insert({
        id: channelId,
        projectId: project.id,
        name: input.name,
        description: input.description ?? null,
        lifecycleId: input.lifecycleId ?? null,
        isDefault,
        versionRange: rules.versionRange ?? null,
        preReleaseTag: rules.preReleaseTag ?? null,
        packageRules: rules.packageRules ?? [],
      });
    }),
  );
  return { channelId };
}

/** Changes only the fields sent; `packageRules`, when sent, replaces the list (null clears it). */
export async function updateChannel(
  deps: DomainDeps,
  principal: Principal,
  input: { channelId: string } & Partial<ChannelInput>,
): Promise<void> {
  const channel = await visibleChannel(deps, principal, input.channelId);
  authorize(principal, Capability.EditProject, { projectId: channel.projectId });
  const rules = versionRules(input);
  await checkLifecycle(deps, channel.workspaceId, input.lifecycleId);
  await withUniqueName('name', input.name ?? channel.name, () =>
    deps.store.transaction(async (tx) => {
      await tx.channels.lockProject(channel.projectId);
      if (input.isDefault === true) await tx.channels.clearDefault(channel.projectId);
      await tx.channels.update(channel.id, {
        name: input.name,
        description: input.description,
        lifecycleId: input.lifecycleId,
        isDefault: input.isDefault,
        ...rules,
      });
    }),
  );
}

export async function deleteChannel(deps: DomainDeps, principal: Principal, channelId: string): Promise<void> {
  const channel = await visibleChannel(deps, principal, channelId);
  authorize(principal, Capability.EditProject, { projectId: channel.projectId });
  // A value scoped to a vanished channel would silently stop applying: refuse instead.
  const variables = await deps.store.channels.usedByVariables(channel.id);
  if (variables.length > 0) {
    throw new InvalidParameterError(
      `Channel '${channel.name}' still scopes values of ${variables.map((n) => `variable '${n}'`).join(', ')}`,
      [{ property: 'channelId', messages: ['in use'] }],
    );
  }
  await deps.store.channels.delete(channel.id);
}
