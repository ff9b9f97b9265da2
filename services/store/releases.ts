import type { ReleaseSnapshot } from '../core/index.ts';
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import { pageOf } from './paging.ts';

export interface Release {
  id: string;
  workspaceId: string;
  projectId: string;
  version: string;
  channelId: string | null;
  channelName: string | null;
  notes: string | null;
  packageVersions: Record<string, string>;
  snapshot: ReleaseSnapshot;
  createdUtc: Date;
}

interface ReleaseRow {
  id: string;
  workspace_id: string;
  project_id: string;
  version: string;
  channel_id: string | null;
  channel_name: string | null;
  notes: string | null;
  package_versions: Record<string, string>;
  snapshot: ReleaseSnapshot;
  created_at: Date;
}

/** What toRelease reads, as `r.…`: a prepared statement lists its columns (store/db.ts). */
const RELEASE_COLUMNS = [
  'id',
  'workspace_id',
  'project_id',
  'version',
  'channel_id',
  'channel_name',
  'notes',
  'package_versions',
  'snapshot',
  'created_at',
] as const satisfies ReadonlyArray<keyof ReleaseRow>;
const RELEASE_SELECT = RELEASE_COLUMNS.map((column) => `r.${column}`);

function toRelease(row: ReleaseRow): Release {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    projectId: row.project_id,
    version: row.version,
    channelId: row.channel_id,
    channelName: row.channel_name,
    notes: row.notes,
    packageVersions: row.package_versions,
    snapshot: row.snapshot,
    createdUtc: row.created_at,
  };
}

export function releasesStore(db: Db) {
  return {
    /** A release whose project is not deleted, or null. */
    async get(id: string): Promise<Release | null> {
      const row = await db<ReleaseRow>('releases as r')
        .join('projects as p', 'p.id', 'r.project_id')
        .whereNull('p.deleted_at')
        .where('r.id', id)
        .first(...RELEASE_SELECT)
        .options({ name: 'gantry_release_v1' });
      return row ? toRelease(row) : null;
    },
    /** As get, when the project's workspace is not deleted either, with its organization: a visibility check in one read. */
    async getWithOrganization(id: string): Promise<{ resource: Release; organizationId: string } | null> {
      const row: (ReleaseRow & { workspace_organization_id: string }) | undefined = await db('releases as r')
        .join('projects as p', 'p.id', 'r.project_id')
        .join('workspaces as w', 'w.id', 'p.workspace_id')
        .whereNull('p.deleted_at')
        .whereNull('w.deleted_at')
        .where('r.id', id)
        .first(...RELEASE_SELECT, 'w.organization_id as workspace_organization_id')
        .options({ name: 'gantry_release_with_organization_v1' });
      return row ? { resource: toRelease(row), organizationId: row.workspace_organization_id } : null;
    },
    async findByVersion(projectId: string, version: string): Promise<Release | null> {
      const row = await db<ReleaseRow>('releases').where({ project_id: projectId, version }).first();
      return row ? toRelease(row) : null;
    },
    /**
     * The project's highest release by SemVer precedence (the first created among equals), or
     * null: one indexed read (`version_order`, migration 202611250900), whatever the release count.
     */
    async highest(projectId: string): Promise<Release | null> {
      const row = await db<ReleaseRow>('releases')
        .where({ project_id: projectId })
        .whereNotNull('version_order')
        .orderBy([
          { column: 'version_order', order: 'desc' },
          { column: 'created_at', order: 'asc' },
          { column: 'id', order: 'asc' },
        ])
        .first(...RELEASE_COLUMNS)
        .options({ name: 'gantry_release_highest_v1' });
      return row ? toRelease(row) : null;
    },
    /** The project's releases whose version has the precedence of `version` (a valid SemVer): build metadata ignored. */
    async equivalents(projectId: string, version: string): Promise<Array<{ id: string; version: string }>> {
      return db('releases')
        .where({ project_id: projectId })
        .whereRaw('version_order = semver_order_key(?)', [version])
        .select('id', 'version');
    },
    /** Newest first. */
    async list(projectId: string, page: Page): Promise<Paged<Release>> {
      return pageOf(
        db<ReleaseRow>('releases').where({ project_id: projectId }),
        page,
        [
          { column: 'created_at', order: 'desc' },
          { column: 'id', order: 'desc' },
        ],
        toRelease,
      );
    },
    /**
     * Stores the release unless the project has one of the same version (equal, or equal once
     * build metadata is dropped) by what is committed now; answers its creation time, or null
     * when the version is taken. Call it with the project locked (release-inputs.ts says why the
     * version is checked again here).
     */
    async insertUnlessVersionTaken(release: Omit<Release, 'createdUtc'>): Promise<Date | null> {
      const { rows }: { rows: Array<{ created_at: Date }> } = await db
        .raw(
          `INSERT INTO releases (id, workspace_id, project_id, version, channel_id, channel_name, notes, package_versions, snapshot)
         SELECT :id, :workspaceId, :projectId, :version, :channelId, :channelName, :notes, :packageVersions::jsonb, :snapshot::jsonb
         WHERE NOT EXISTS (SELECT 1 FROM releases WHERE project_id = :projectId
                           AND (version = :version OR version_order = semver_order_key(:version)))
         RETURNING created_at`,
          {
            id: release.id,
            workspaceId: release.workspaceId,
            projectId: release.projectId,
            version: release.version,
            channelId: release.channelId,
            channelName: release.channelName,
            notes: release.notes,
            packageVersions: JSON.stringify(release.packageVersions),
            snapshot: JSON.stringify(release.snapshot),
          },
        )
        .options({ name: 'gantry_release_insert_v1' });
      return rows[0]?.created_at ?? null;
    },
  };
}
