/**
 * The package store (api-spec §2.6, §4.6, §4.7; contract §6): uploads stream to a private
 * staging file (hashed, counted, capped), are checked as archives, and only then become a blob in
 * the feed plus a row. Direct uploads go to a pending blob through a signed URL and are promoted
 * by confirm through the same checks. Every failure removes what it staged.
 */
import path from 'node:path';
import type { Readable } from 'node:stream';
import { authorize, Capability, InvalidParameterError, newId, type Clock, type Principal } from '../core/index.ts';
import { sortSemVerDescending } from '../core/index.ts';
import { visibleWorkspace, type DomainDeps } from '../domain/index.ts';
import { isUniqueViolation, type StoredPackage, type Workspace } from '../store/index.ts';
import { checkArchive } from './archive-check.ts';
import type { BlobStore } from './blob-store.ts';
import { receiveDirectUpload, type DirectUploadRequest } from './direct-upload.ts';
import { packageFileName, parsePackageFileName, type PackageFileName } from './file-name.ts';
import { discard, GIB, stageStream, type StagedFile } from './staging.ts';

export const DEFAULT_MAX_PACKAGE_BYTES = GIB;
export const UPLOAD_URL_LIFETIME_MS = 4 * 60 * 60 * 1000;

export interface PackageServiceOptions {
  deps: DomainDeps;
  clock: Clock;
  blobs: BlobStore;
  /** Private staging folder for uploads in progress (normally <dataDir>/packages/.staging). */
  stagingDir: string;
  /** At most this many bytes per package (1 GiB; tests use less). */
  maxBytes?: number;
}

export interface UploadInput {
  workspaceId: string;
  fileName: string;
}

export type NegotiateResult = { mode: 'legacy' } | { mode: 'direct'; uploadUrl: string };

export interface Download {
  package: StoredPackage;
  fileName: string;
  stream: Readable;
}

function duplicate(name: PackageFileName, property: string): InvalidParameterError {
  return new InvalidParameterError(
    `Package ${name.packageId} version ${name.version} already exists in this workspace; packages are immutable`,
    [{ property, messages: ['this package ID and version already exist'] }],
  );
}

export function createPackageService(options: PackageServiceOptions) {
  const { deps, clock, blobs, stagingDir } = options;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_PACKAGE_BYTES;
  const store = deps.store.packages;

  async function pushTarget(principal: Principal, input: UploadInput, property: string, workspaceProperty: string) {
    const workspace = await visibleWorkspace(deps, principal, input.workspaceId, workspaceProperty);
    authorize(principal, Capability.PushPackages);
    const name = parsePackageFileName(input.fileName, property);
    if (await store.findByPrecedence(workspace.id, name.packageId, name.version)) throw duplicate(name, property);
    return { workspace, name };
  }

  /** Checks a staged file and publishes it. The staged file is consumed or deleted either way. */
  async function publish(
    workspace: Workspace,
    name: PackageFileName,
    staged: StagedFile,
    property: string,
  ): Promise<StoredPackage> {
    const id = newId();
    const blobKey = `feed/${workspace.id}/${id}`;
    let blobWritten = false;
    try {
      if (staged.sizeBytes === 0)
        throw new InvalidParameterError('The package file is empty', [{ property, messages: ['empty file'] }]);
      await checkArchive(staged.path, name.type, property);
      const stored: StoredPackage = {
        id,
        workspaceId: workspace.id,
        packageId: name.packageId,
        version: name.version,
        type: name.type,
        sizeBytes: staged.sizeBytes,
        sha256: staged.sha256,
        blobKey,
        uploadedAt: clock.now(),
      };
      await blobs.putFile(blobKey, staged.path);
      blobWritten = true;
      await store.insert(stored).catch((error: unknown) => {
        throw isUniqueViolation(error) ? duplicate(name, property) : error;
      });
      return stored;
    } catch (error) {
      if (blobWritten) await blobs.delete(blobKey);
      throw error;
    } finally {
      await discard(staged);
    }
  }

  async function stage(source: Readable, property: string): Promise<StagedFile> {
    return stageStream(source, stagingDir, maxBytes, property);
  }

  return {
    maxBytes,

    /** Multipart upload (§4.6) when the workspace is known before the file arrives. */
    async upload(principal: Principal, input: UploadInput, source: Readable): Promise<StoredPackage> {
      const { workspace, name } = await pushTarget(principal, input, 'PackageFile', 'workspaceId');
      return publish(workspace, name, await stage(source, 'PackageFile'), 'PackageFile');
    },

    /** Streams a file to staging before its target is known (a form that sends the file first). */
    stage: (source: Readable) => stage(source, 'PackageFile'),

    /** Publishes a file from `stage`; deletes it when refused. */
    async publishStaged(principal: Principal, input: UploadInput, staged: StagedFile): Promise<StoredPackage> {
      try {
        const { workspace, name } = await pushTarget(principal, input, 'PackageFile', 'workspaceId');
        return await publish(workspace, name, staged, 'PackageFile');
      } finally {
        await discard(staged);
      }
    },

    discard,

    /** Packages of a workspace (optionally one ID), highest SemVer first, then by ID. */
    async list(
      principal: Principal,
      query: { workspaceId: string; packageId?: string | undefined },
    ): Promise<StoredPackage[]> {
      const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
      authorize(principal, Capability.View);
      return sortPackages(await store.list(workspace.id, query.packageId));
    },

    async download(
      principal: Principal,
      query: { workspaceId: string; packageId: string; version: string },
    ): Promise<Download> {
      const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
      authorize(principal, [Capability.View, Capability.Deploy]);
      const found = await store.findByPrecedence(workspace.id, query.packageId, query.version);
      // A query with build metadata must match it exactly; without, the precedence match is the one.
      if (!found || (query.version.includes('+') && found.version !== query.version)) {
        throw new InvalidParameterError(`Package ${query.packageId} version ${query.version} was not found`, [
          { property: 'version', messages: ['not found'] },
        ]);
      }
      const stream = await blobs.openRead(found.blobKey);
      if (!stream) throw new Error(`Blob ${found.blobKey} of package ${found.id} is missing`);
      return {
        package: found,
        fileName: packageFileName({ ...found, type: found.type as PackageFileName['type'] }),
        stream,
      };
    },

    /** §4.7: `direct` for a workspace whose package store is in a region, else `legacy`. */
    async negotiate(principal: Principal, input: UploadInput): Promise<NegotiateResult> {
      const { workspace } = await pushTarget(principal, input, 'FileName', 'WorkspaceId');
      if (!workspace.packageStoreRegion) return { mode: 'legacy' };
      const previous = await store.findPendingUpload(workspace.id, input.fileName);
      if (previous) {
        // A new negotiate for the same file replaces the old URL; its blob (if any) is dropped.
        await store.deletePendingUpload(previous.id);
        await blobs.retire(previous.blobKey);
      }
      const id = newId();
      const now = clock.now();
      const expiresAt = new Date(now.getTime() + UPLOAD_URL_LIFETIME_MS);
      const blobKey = `pending/${id}`;
      await store.insertPendingUpload({
        id,
        workspaceId: workspace.id,
        fileName: input.fileName,
        blobKey,
        expiresAt,
        uploadedAt: null,
        createdAt: now,
      });
      return { mode: 'direct', uploadUrl: await blobs.createUploadUrl(blobKey, expiresAt) };
    },

    /** Validates the pending blob and promotes it into the feed; then the pending upload is gone. */
    async confirm(principal: Principal, input: UploadInput): Promise<StoredPackage> {
      const { workspace, name } = await pushTarget(principal, input, 'FileName', 'WorkspaceId');
      const pending = await store.findPendingUpload(workspace.id, input.fileName);
      if (!pending) {
        throw new InvalidParameterError(`No direct upload was negotiated for '${input.fileName}'`, [
          { property: 'FileName', messages: ['no negotiated upload'] },
        ]);
      }
      const source = await blobs.openRead(pending.blobKey);
      if (!source) {
        throw new InvalidParameterError(
          `Nothing was uploaded to the upload URL of '${input.fileName}'; PUT the file first`,
          [{ property: 'FileName', messages: ['no uploaded blob'] }],
        );
      }
      try {
        return await publish(workspace, name, await stage(source, 'FileName'), 'FileName');
      } finally {
        // Published or refused, the pending upload is finished: a refused one must be negotiated again.
        await store.deletePendingUpload(pending.id);
        await blobs.retire(pending.blobKey);
      }
    },

    /** The filesystem backend's `PUT <uploadUrl>`; expected refusals are results, not errors. */
    receiveDirectUpload: (request: DirectUploadRequest): Promise<void> =>
      receiveDirectUpload({ store, blobs, clock, stage: (s) => stage(s, 'body') }, request),
  };
}

export type PackageService = ReturnType<typeof createPackageService>;

/** Highest SemVer first; packages of different IDs grouped by ID. */
function sortPackages(packages: StoredPackage[]): StoredPackage[] {
  const byId = new Map<string, StoredPackage[]>();
  for (const p of packages) {
    const key = p.packageId.toLowerCase();
    byId.set(key, [...(byId.get(key) ?? []), p]);
  }
  return [...byId.keys()].sort().flatMap((key) => {
    const group = byId.get(key) ?? [];
    const order = sortSemVerDescending(group.map((p) => p.version));
    return order.map((v) => group.find((p) => p.version === v) as StoredPackage);
  });
}

export function stagingDirOf(dataDir: string): string {
  return path.join(dataDir, 'packages', '.staging');
}
