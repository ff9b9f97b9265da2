/**
 * Where package bytes live, behind one port: the filesystem (default) or Azure Blob Storage.
 * Keys are produced by the package service only (`feed/<workspace>/<id>`, `pending/<id>`); a
 * blob is in the feed only once a packages row points at it.
 */
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { isValidUploadSignature, signUpload } from './upload-signature.ts';

export interface BlobStore {
  readonly kind: 'filesystem' | 'azure';
  /** Moves a complete local file into the store under `key` (the local file is gone afterwards). */
  putFile(key: string, localPath: string): Promise<void>;
  /** The blob's bytes, or null when there is no such blob. */
  openRead(key: string): Promise<Readable | null>;
  /** Idempotent. */
  delete(key: string): Promise<void>;
  /**
   * Ends a pending blob's life so that its upload URL cannot create it again: the filesystem
   * backend deletes it (its PUT handler refuses once the pending row is gone); Azure keeps an
   * empty placeholder, because a Create-only SAS refuses to overwrite an existing blob.
   */
  retire(key: string): Promise<void>;
  /** A URL to which a client may PUT exactly one blob at `key` (write-only) until `expiresAt`. */
  createUploadUrl(key: string, expiresAt: Date): Promise<string>;
}

const SAFE_KEY = /^(?:feed|pending)(?:\/[A-Za-z0-9_-][A-Za-z0-9_.-]*)+$/;

/** Refuses anything but the keys we generate, so a key can never address a path outside the root. */
export function assertSafeKey(key: string): void {
  if (!SAFE_KEY.test(key) || key.includes('..')) throw new Error(`Unsafe blob key '${key}'`);
}

export interface FilesystemBlobStoreOptions {
  /** Root folder, normally <dataDir>/packages. */
  root: string;
  /** Gantry's public address: filesystem upload URLs point at Gantry itself. */
  publicUrl: string;
  hmacKey: Buffer;
}

export interface FilesystemBlobStore extends BlobStore {
  readonly kind: 'filesystem';
  /** True when `sig` is this store's signature of `key` and `exp` (expiry is checked by the caller). */
  isSignedUpload(key: string, exp: number, sig: string): boolean;
}

export function isFilesystemBlobStore(blobs: BlobStore): blobs is FilesystemBlobStore {
  return blobs.kind === 'filesystem';
}

export function createFilesystemBlobStore(options: FilesystemBlobStoreOptions): FilesystemBlobStore {
  const fileOf = (key: string) => {
    assertSafeKey(key);
    return path.join(options.root, ...key.split('/'));
  };
  const base = options.publicUrl.replace(/\/+$/, '');
  return {
    kind: 'filesystem',
    isSignedUpload: (key, exp, sig) => isValidUploadSignature(options.hmacKey, key, exp, sig),
    async putFile(key, localPath) {
      const target = fileOf(key);
      await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
      // rename is atomic on one filesystem: readers see no blob or the whole blob. The staging
      // folder sits under the same data dir; across devices fall back to copy + rename.
      try {
        await fs.rename(localPath, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
        const temp = `${target}.${process.pid}.partial`;
        await fs.copyFile(localPath, temp);
        await fs.rename(temp, target);
        await fs.rm(localPath, { force: true });
      }
    },
    async openRead(key) {
      const file = fileOf(key);
      try {
        const handle = await fs.open(file, 'r');
        return createReadStream(file, { fd: handle });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    async delete(key) {
      await fs.rm(fileOf(key), { force: true });
    },
    async retire(key) {
      await fs.rm(fileOf(key), { force: true });
    },
    async createUploadUrl(key, expiresAt) {
      assertSafeKey(key);
      const token = key.slice('pending/'.length);
      if (!key.startsWith('pending/') || token.includes('/'))
        throw new Error('Upload URLs are only issued for pending blobs');
      const exp = Math.floor(expiresAt.getTime() / 1000);
      const sig = signUpload(options.hmacKey, key, exp);
      return `${base}/api/packagestore/blob/${encodeURIComponent(token)}?exp=${exp}&sig=${sig}`;
    },
  };
}
