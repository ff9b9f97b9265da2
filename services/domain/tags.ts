/** Tags (contract §3): labels on machines, used by step filters and rolling-group order. */
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
} from '../core/index.ts';
import type { Tag } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export async function listTags(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<Tag>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  return deps.store.tags.list(workspace.id, toPage(query));
}

export async function createTag(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; name: string; color?: string | null | undefined },
): Promise<{ tagId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const tag: Tag = { id: newId(), workspaceId: workspace.id, name: input.name, color: input.color ?? null };
  await withUniqueName('name', input.name, () => deps.store.tags.insert(tag));
  return { tagId: tag.id };
}

export async function updateTag(
  deps: DomainDeps,
  principal: Principal,
  input: { tagId: string; name?: string | undefined; color?: string | null | undefined },
): Promise<void> {
  const tag = await visibleResource(deps, principal, deps.store.tags.get(input.tagId), 'tagId');
  authorize(principal, Capability.ManageWorkspace);
  await withUniqueName('name', input.name ?? tag.name, () =>
    deps.store.tags.update(tag.id, { name: input.name, color: input.color }),
  );
}

export async function deleteTag(deps: DomainDeps, principal: Principal, tagId: string): Promise<void> {
  const tag = await visibleResource(deps, principal, deps.store.tags.get(tagId), 'tagId');
  authorize(principal, Capability.ManageWorkspace);
  // Dropping a tag from a step filter would widen the filter to more machines: refuse instead.
  const usage = await deps.store.tags.usedBy(tag.id);
  if (usage.steps.length > 0 || usage.rollingGroups.length > 0) {
    const users = [...usage.steps.map((n) => `step '${n}'`), ...usage.rollingGroups.map((n) => `rolling group '${n}'`)];
    throw new InvalidParameterError(`Tag '${tag.name}' is still used by ${users.join(', ')}`, [
      { property: 'tagId', messages: ['in use'] },
    ]);
  }
  await deps.store.transaction((tx) => tx.tags.delete(tag.id));
}

/** Checks every tag ID belongs to the workspace; else 400 naming `property`. */
export async function requireTags(
  deps: DomainDeps,
  workspaceId: string,
  tagIds: readonly string[],
  property = 'tagIds',
): Promise<void> {
  const unique = [...new Set(tagIds)];
  const found = await deps.store.tags.getMany(workspaceId, unique);
  if (found.length !== unique.length) throw unknownId(property);
}
