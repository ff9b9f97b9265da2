/**
 * Feeds (contract §3, §6): where steps fetch packages from. Every workspace has the built-in feed
 * (its own package store), created lazily so that workspaces made by any path get one; it can be
 * neither changed nor deleted. External feeds' credentials are sealed at rest and never returned.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { Feed } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export const BUILTIN_FEED_NAME = 'Built-in';
export const BUILTIN_FEED_TYPE = 'BuiltIn';

/** The external feed types a caller may create; `BuiltIn` is reserved for the package store. */
export const FeedType = { NuGet: 'NuGet', Maven: 'Maven', Http: 'Http', Docker: 'Docker' } as const;
export type FeedType = (typeof FeedType)[keyof typeof FeedType];

interface FeedCredentials {
  username: string | null;
  password: string | null;
}

export interface FeedView {
  id: string;
  workspaceId: string;
  name: string;
  feedType: string;
  url: string | null;
  isBuiltin: boolean;
  hasPassword: boolean;
}

function readCredentials(deps: DomainDeps, feed: Feed): FeedCredentials {
  if (!feed.configEncrypted) return { username: null, password: null };
  const parsed = JSON.parse(deps.secrets.decrypt(feed.configEncrypted)) as Partial<FeedCredentials>;
  return { username: parsed.username ?? null, password: parsed.password ?? null };
}

function sealCredentials(deps: DomainDeps, credentials: FeedCredentials): string | null {
  if (credentials.username === null && credentials.password === null) return null;
  return deps.secrets.encrypt(JSON.stringify(credentials));
}

function toView(deps: DomainDeps, feed: Feed): FeedView {
  const { password } = readCredentials(deps, feed);
  return {
    id: feed.id,
    workspaceId: feed.workspaceId,
    name: feed.name,
    feedType: feed.feedType,
    url: feed.url,
    isBuiltin: feed.isBuiltin,
    hasPassword: password !== null,
  };
}

/** An absolute http(s) URL, else 400: the agent will fetch from it. */
function requireUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidParameterError('Invalid url: not an absolute URL', [
      { property: 'url', messages: ['must be an absolute http(s) URL'] },
    ]);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new InvalidParameterError('Invalid url: only http and https are supported', [
      { property: 'url', messages: ['must be an absolute http(s) URL'] },
    ]);
  }
  return url;
}

/** Creates the workspace's built-in feed if it is missing (idempotent, safe under concurrency). */
export async function ensureBuiltinFeed(deps: DomainDeps, workspaceId: string): Promise<void> {
  if (await deps.store.feeds.hasBuiltin(workspaceId)) return;
  await deps.store.feeds.ensureBuiltin({
    id: newId(),
    workspaceId,
    name: BUILTIN_FEED_NAME,
    feedType: BUILTIN_FEED_TYPE,
    url: null,
    isBuiltin: true,
    configEncrypted: null,
  });
}

async function visibleFeed(deps: DomainDeps, principal: Principal, feedId: string): Promise<Feed> {
  return visibleResource(deps, principal, deps.store.feeds.get(feedId), 'feedId');
}

function refuseBuiltin(feed: Feed, what: string): void {
  if (feed.isBuiltin) {
    throw new InvalidParameterError(`The built-in feed cannot be ${what}`, [
      { property: 'feedId', messages: [`the built-in feed cannot be ${what}`] },
    ]);
  }
}

export async function listFeeds(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<FeedView>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  await ensureBuiltinFeed(deps, workspace.id);
  const page = await deps.store.feeds.list(workspace.id, toPage(query));
  return { items: page.items.map((f) => toView(deps, f)), totalCount: page.totalCount };
}

export async function getFeed(deps: DomainDeps, principal: Principal, feedId: string): Promise<FeedView> {
  const feed = await visibleFeed(deps, principal, feedId);
  authorize(principal, Capability.View);
  return toView(deps, feed);
}

export interface FeedInput {
  name: string;
  feedType: FeedType;
  url: string;
  username?: string | null | undefined;
  password?: string | null | undefined;
}

export async function createFeed(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string } & FeedInput,
): Promise<{ feedId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  // The built-in feed claims its name first, so no external feed can take it.
  await ensureBuiltinFeed(deps, workspace.id);
  const feed: Feed = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    feedType: input.feedType,
    url: requireUrl(input.url),
    isBuiltin: false,
    configEncrypted: sealCredentials(deps, { username: input.username ?? null, password: input.password ?? null }),
  };
  await withUniqueName('name', input.name, () => deps.store.feeds.insert(feed));
  return { feedId: feed.id };
}

export async function updateFeed(
  deps: DomainDeps,
  principal: Principal,
  input: { feedId: string } & Partial<FeedInput>,
): Promise<void> {
  const feed = await visibleFeed(deps, principal, input.feedId);
  authorize(principal, Capability.ManageWorkspace);
  const { feedId: _feedId, ...fields } = input;
  const changes = Object.entries(fields).filter(
    ([key, value]) => value !== undefined && !(key === 'name' && value === feed.name),
  );
  if (changes.length > 0) refuseBuiltin(feed, 'changed');
  await ensureBuiltinFeed(deps, feed.workspaceId);

  let configEncrypted: string | null | undefined;
  if (input.username !== undefined || input.password !== undefined) {
    const current = readCredentials(deps, feed);
    configEncrypted = sealCredentials(deps, {
      username: input.username === undefined ? current.username : input.username,
      password: input.password === undefined ? current.password : input.password,
    });
  }
  await withUniqueName('name', input.name ?? feed.name, () =>
    deps.store.feeds.update(feed.id, {
      name: input.name,
      feedType: input.feedType,
      url: input.url === undefined ? undefined : requireUrl(input.url),
      configEncrypted,
    }),
  );
}

export async function deleteFeed(deps: DomainDeps, principal: Principal, feedId: string): Promise<void> {
  const feed = await visibleFeed(deps, principal, feedId);
  authorize(principal, Capability.ManageWorkspace);
  refuseBuiltin(feed, 'deleted');
  await deps.store.feeds.delete(feed.id);
}
