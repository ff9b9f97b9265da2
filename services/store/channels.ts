/**
 * Project channels (contract §3): version rules and an optional lifecycle for a project's releases.
 * A channel exists only while its project is live; its workspace is its project's.
 */
import type { Db } from './db.ts';

export interface PackageRule {
  packageId: string;
  versionRange: string | null;
  preReleaseTag: string | null;
}

export interface Channel {
  id: string;
  projectId: string;
  workspaceId: string;
  name: string;
  description: string | null;
  lifecycleId: string | null;
  isDefault: boolean;
  versionRange: string | null;
  preReleaseTag: string | null;
  packageRules: PackageRule[];
}

export type ChannelPatch = Partial<Omit<Channel, 'id' | 'projectId' | 'workspaceId'>>;

export interface ChannelRow {
  id: string;
  project_id: string;
  workspace_id: string;
  name: string;
  description: string | null;
  lifecycle_id: string | null;
  is_default: boolean;
  version_range: string | null;
  pre_release_tag: string | null;
  package_rules: PackageRule[];
}

export function toChannel(row: ChannelRow): Channel {
  return {
    id: row.id,
    projectId: row.project_id,
    workspaceId: row.workspace_id,
    name: row.name,
    description: row.description,
    lifecycleId: row.lifecycle_id,
    isDefault: row.is_default,
    versionRange: row.version_range,
    preReleaseTag: row.pre_release_tag,
    // Mapped field by field so stored JSON never leaks extra keys into the read model.
    packageRules: row.package_rules.map((r) => ({
      packageId: r.packageId,
      versionRange: r.versionRange ?? null,
      preReleaseTag: r.preReleaseTag ?? null,
    })),
  };
}

export function channelsStore(db: Db) {
  const live = () =>
    db('channels as c')
      .join('projects as p', 'p.id', 'c.project_id')
      .whereNull('p.deleted_at')
      .select('c.*', 'p.workspace_id');
  return {
    /** A channel of a live project, or null. */
    async get(id: string): Promise<Channel | null> {
      const row: ChannelRow | undefined = await live().where('c.id', id).first();
      return row ? toChannel(row) : null;
    },
    /** The channels of a project, default first, then by name. */
    async listByProject(projectId: string): Promise<Channel[]> {
      const rows: ChannelRow[] = await live()
        .where('c.project_id', projectId)
        .orderBy([{ column: 'c.is_default', order: 'desc' }, { column: 'c.name' }, { column: 'c.id' }]);
      return rows.map(toChannel);
    },
    /** A project's channel by name (case-insensitive), or null: how a release names its channel. */
    async findByName(projectId: string, name: string): Promise<Channel | null> {
      const row: ChannelRow | undefined = await live()
        .where('c.project_id', projectId)
        .whereRaw('lower(c.name) = lower(?)', [name])
        .first();
      return row ? toChannel(row) : null;
    },
    /** The project's default channel, or null. */
    async getDefault(projectId: string): Promise<Channel | null> {
      const row: ChannelRow | undefined = await live()
        .where({ 'c.project_id': projectId, 'c.is_default': true })
        .first();
      return row ? toChannel(row) : null;
    },
    /** Locks the project row until the transaction ends, serializing default-channel changes. */
    async lockProject(projectId: string): Promise<void> {
      await db('projects').where({ id: projectId }).forNoKeyUpdate().first('id');
    },
    /** Takes the default flag off every channel of the project. */
    async clearDefault(projectId: string): Promise<void> {
      await db('channels').where({ project_id: projectId, is_default: true }).update({ is_default: false });
    },
    async insert(channel: Omit<Channel, 'workspaceId'>): Promise<void> {
      await db('channels').insert({
        id: channel.id,
        project_id: channel.projectId,
        name: channel.name,
        description: channel.description,
        lifecycle_id: channel.lifecycleId,
        is_default: channel.isDefault,
        version_range: channel.versionRange,
        pre_release_tag: channel.preReleaseTag,
        package_rules: JSON.stringify(channel.packageRules),
      });
    },
    async update(id: string, patch: ChannelPatch): Promise<void> {
      const row: Record<string, unknown> = {};
      if (patch.name !== undefined) row.name = patch.name;
      if (patch.description !== undefined) row.description = patch.description;
      if (patch.lifecycleId !== undefined) row.lifecycle_id = patch.lifecycleId;
      if (patch.isDefault !== undefined) row.is_default = patch.isDefault;
      if (patch.versionRange !== undefined) row.version_range = patch.versionRange;
      if (patch.preReleaseTag !== undefined) row.pre_release_tag = patch.preReleaseTag;
      if (patch.packageRules !== undefined) row.package_rules = JSON.stringify(patch.packageRules);
      if (Object.keys(row).length > 0) await db('channels').where({ id }).update(row);
    },
    /** Names of the live variables with a live value scoped to the channel. */
    async usedByVariables(id: string): Promise<string[]> {
      const rows = await db('variable_values as vv')
        .join('variables as v', 'v.id', 'vv.variable_id')
        .whereNull('vv.deleted_at')
        .whereNull('v.deleted_at')
        .whereRaw('vv.channel_filter \\? ?', [id])
        .distinct('v.name')
        .orderBy('v.name');
      return rows.map((r) => r.name as string);
    },
    async delete(id: string): Promise<void> {
      await db('channels').where({ id }).delete();
    },
  };
}
