/**
 * Package metadata (contract §6) and open direct uploads. The bytes live in a blob store; a row
 * here is what puts a package in the feed, so a blob without a row is never served.
 */
import type { Db } from './db.ts';

export interface StoredPackage {
  id: string;
  workspaceId: string;
  packageId: string;
  /** As uploaded, build metadata included. */
  version: string;
  type: string;
  sizeBytes: number;
  sha256: string;
  blobKey: string;
  uploadedAt: Date;
}

export interface PendingUpload {
  id: string;
  workspaceId: string;
  fileName: string;
  blobKey: string;
  expiresAt: Date;
  /** Set when the bytes arrived (filesystem backend only; Azure receives them directly). */
  uploadedAt: Date | null;
  createdAt: Date;
}

interface PackageRow {
  id: string;
  workspace_id: string;
  package_id: string;
  version: string;
  version_precedence: string;
  type: string;
  size_bytes: string;
  sha256: string;
  blob_key: string;
  uploaded_at: Date;
}

interface PendingUploadRow {
  id: string;
  workspace_id: string;
  file_name: string;
  blob_key: string;
  expires_at: Date;
  uploaded_at: Date | null;
  created_at: Date;
}

function toPackage(row: PackageRow): StoredPackage {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    packageId: row.package_id,
    version: row.version,
    type: row.type,
    // int8 arrives as a string; packages are at most 1 GiB, far below 2^53.
    sizeBytes: Number(row.size_bytes),
    sha256: row.sha256,
    blobKey: row.blob_key,
    uploadedAt: row.uploaded_at,
  };
}

function toPendingUpload(row: PendingUploadRow): PendingUpload {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    fileName: row.file_name,
    blobKey: row.blob_key,
    expiresAt: row.expires_at,
    uploadedAt: row.uploaded_at,
    createdAt: row.created_at,
  };
}

/** SemVer precedence ignores build metadata, so uniqueness does too. */
export function versionPrecedence(version: string): string {
  const plus = version.indexOf('+');
  return plus === -1 ? version : version.slice(0, plus);
}

export function packagesStore(db: Db) {
  const packages = () => db<PackageRow>('packages');
  const pending = () => db<PendingUploadRow>('pending_uploads');
  return {
    /** Every version of every package of a workspace, or of one package ID (case-insensitive). Unordered: SemVer order is not SQL order. */
    async list(workspaceId: string, packageId?: string): Promise<StoredPackage[]> {
      const query = packages().where({ workspace_id: workspaceId });
      if (packageId !== undefined) query.whereRaw('lower(package_id) = lower(?)', [packageId]);
      return (await query).map(toPackage);
    },
    /** The package whose version has the same precedence (build metadata ignored), or null. */
    async findByPrecedence(workspaceId: string, packageId: string, version: string): Promise<StoredPackage | null> {
      const row = await packages()
        .where({ workspace_id: workspaceId, version_precedence: versionPrecedence(version) })
        .whereRaw('lower(package_id) = lower(?)', [packageId])
        .first();
      return row ? toPackage(row) : null;
    },
    /** Throws a unique violation when the same ID and version (ignoring build metadata) exists. */
    async insert(p: StoredPackage): Promise<void> {
      await db('packages').insert({
        id: p.id,
        workspace_id: p.workspaceId,
        package_id: p.packageId,
        version: p.version,
        version_precedence: versionPrecedence(p.version),
        type: p.type,
        size_bytes: p.sizeBytes,
        sha256: p.sha256,
        blob_key: p.blobKey,
        uploaded_at: p.uploadedAt,
      });
    },

    async getPendingUpload(id: string): Promise<PendingUpload | null> {
      const row = await pending().where({ id }).first();
      return row ? toPendingUpload(row) : null;
    },
    async findPendingUpload(workspaceId: string, fileName: string): Promise<PendingUpload | null> {
      const row = await pending()
        .where({ workspace_id: workspaceId })
        .whereRaw('lower(file_name) = lower(?)', [fileName])
        .first();
      return row ? toPendingUpload(row) : null;
    },
    async insertPendingUpload(upload: PendingUpload): Promise<void> {
      await db('pending_uploads').insert({
        id: upload.id,
        workspace_id: upload.workspaceId,
        file_name: upload.fileName,
        blob_key: upload.blobKey,
        expires_at: upload.expiresAt,
        uploaded_at: upload.uploadedAt,
        created_at: upload.createdAt,
      });
    },
    /** Marks the bytes as received, once: false when another PUT got there first. */
    async markPendingUploaded(id: string, at: Date): Promise<boolean> {
      return (await pending().where({ id }).whereNull('uploaded_at').update({ uploaded_at: at })) === 1;
    },
    /** After a failed transfer: no blob was written, so the URL may be used again. */
    async clearPendingUploaded(id: string): Promise<void> {
      await pending().where({ id }).update({ uploaded_at: null });
    },
    async deletePendingUpload(id: string): Promise<void> {
      await pending().where({ id }).delete();
    },
  };
}

export type PackagesStore = ReturnType<typeof packagesStore>;
