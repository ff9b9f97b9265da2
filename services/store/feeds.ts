/**
 * Package feeds of a workspace (contract §3, §6). Exactly one is built in: the workspace package
 * store. Credentials live only in `config_encrypted`, sealed by the domain before they get here.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface Feed {
  id: string;
  workspaceId: string;
  name: string;
  feedType: string;
  url: string | null;
  isBuiltin: boolean;
  /** Sealed JSON of the feed's credentials, or null when it has none. */
  configEncrypted: string | null;
}

interface FeedRow {
  id: string;
  workspace_id: string;
  name: string;
  feed_type: string;
  url: string | null;
  is_builtin: boolean;
  config_encrypted: string | null;
}

function toFeed(row: FeedRow): Feed {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    feedType: row.feed_type,
    url: row.url,
    isBuiltin: row.is_builtin,
    configEncrypted: row.config_encrypted,
  };
}

function toRow(feed: Feed): FeedRow {
  return {
    id: feed.id,
    workspace_id: feed.workspaceId,
    name: feed.name,
    feed_type: feed.feedType,
    url: feed.url,
    is_builtin: feed.isBuiltin,
    config_encrypted: feed.configEncrypted,
  };
}

export function feedsStore(db: Db) {
  const feeds = () => db<FeedRow>('feeds');
  return {
    async get(id: string): Promise<Feed | null> {
      const row = await feeds().where({ id }).first();
      return row ? toFeed(row) : null;
    },
    /** The built-in feed first, then the others by name. */
    async list(workspaceId: string, page: Page): Promise<Paged<Feed>> {
      return pageOf(
        feeds().where({ workspace_id: workspaceId }),
        page,
        [{ column: 'is_builtin', order: 'desc' }, { column: 'name' }],
        toFeed,
      );
    },
    async hasBuiltin(workspaceId: string): Promise<boolean> {
      return (await feeds().where({ workspace_id: workspaceId, is_builtin: true }).first()) !== undefined;
    },
    /**
     * Inserts the built-in feed unless the workspace has it. Idempotent under concurrency: the
     * name's unique index turns a racing second insert into a no-op.
     */
    async ensureBuiltin(feed: Feed): Promise<void> {
      await feeds().insert(toRow(feed)).onConflict().ignore();
    },
    async insert(feed: Feed): Promise<void> {
      await feeds().insert(toRow(feed));
    },
    async update(
      id: string,
      patch: Partial<Pick<Feed, 'name' | 'feedType' | 'url' | 'configEncrypted'>>,
    ): Promise<void> {
      const row: Partial<FeedRow> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.feedType !== undefined) row.feed_type = patch.feedType;
      if (patch.url !== undefined) row.url = patch.url;
      if (patch.configEncrypted !== undefined) row.config_encrypted = patch.configEncrypted;
      if (Object.keys(row).length > 0) await feeds().where({ id }).update(row);
    },
    async delete(id: string): Promise<void> {
      await feeds().where({ id }).delete();
    },
  };
}
