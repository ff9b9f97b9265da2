// The agent's package cache: GANTRY_AGENT_HOME/packages/<id>/<version>/package, filled from the
// control plane and verified by sha256 before it is used. `redownload` bypasses the cache. A
// version's marker file is touched whenever a task uses it; `prune` drops versions unused since.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, rmdir, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PackageRef } from '../connection/index.ts';
import { isSafePathSegment } from './safe-name.ts';

/** Where package bytes come from (the control plane's DownloadPackage stream). */
export interface PackageSource {
  download(packageId: string, version: string, signal: AbortSignal): Readable;
}

export class PackageCache {
  readonly #root: string;
  readonly #source: PackageSource;
  /** One download per package version at a time, shared by concurrent tasks. */
  readonly #inflight = new Map<string, Promise<string>>();

  /** The agent's clock for "last used" (the marker's mtime); tests move it instead of sleeping. */
  readonly #now: () => number;

  constructor(root: string, source: PackageSource, now: () => number = Date.now) {
    this.#root = root;
    this.#source = source;
    this.#now = now;
  }

  async #touch(marker: string): Promise<void> {
    const now = new Date(this.#now());
    await utimes(marker, now, now);
  }

  /** Path of the verified package file, downloading it unless a verified copy is cached. */
  async get(ref: PackageRef, options: { redownload: boolean; signal: AbortSignal }): Promise<string> {
    if (!isSafePathSegment(ref.packageId) || !isSafePathSegment(ref.version)) {
      throw new Error(`Package ${JSON.stringify(ref.packageId)} ${JSON.stringify(ref.version)} has an unusable name`);
    }
    const key = `${ref.packageId}/${ref.version}`;
    const running = this.#inflight.get(key);
    if (running) await running.catch(() => undefined);
    const next = this.#fetch(ref, options);
    this.#inflight.set(key, next);
    try {
      return await next;
    } finally {
      if (this.#inflight.get(key) === next) this.#inflight.delete(key);
    }
  }

  async #fetch(ref: PackageRef, options: { redownload: boolean; signal: AbortSignal }): Promise<string> {
    const dir = path.join(this.#root, ref.packageId, ref.version);
    const file = path.join(dir, 'package');
    const marker = path.join(dir, 'package.sha256');
    const expected = ref.sha256.toLowerCase();
    if (!options.redownload && expected !== '' && (await readMarker(marker)) === expected && (await exists(file))) {
      await this.#touch(marker);
      return file;
    }

    await mkdir(dir, { recursive: true, mode: 0o700 });
    const partial = `${file}.download-${randomBytes(6).toString('hex')}`;
    const hash = createHash('sha256');
    let bytes = 0;
    const hasher = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        hash.update(chunk);
        bytes += chunk.length;
        callback(null, chunk);
      },
    });
    // Created before the download starts: a write stream opens its file on the thread pool, and a
    // download failing at once could have the rm below run before that open (a partial left behind).
    const output = (await open(partial, 'wx', 0o600)).createWriteStream();
    try {
      await pipeline(this.#source.download(ref.packageId, ref.version, options.signal), hasher, output, {
        signal: options.signal,
      });
      const actual = hash.digest('hex');
      if (expected !== '' && actual !== expected) {
        throw new Error(
          `Package ${ref.packageId} ${ref.version} failed verification: sha256 ${actual}, expected ${expected}`,
        );
      }
      const expectedSize = Number(ref.sizeBytes);
      if (expectedSize > 0 && bytes !== expectedSize) {
        throw new Error(
          `Package ${ref.packageId} ${ref.version} failed verification: ${bytes} bytes, expected ${expectedSize}`,
        );
      }
      await rm(marker, { force: true });
      await rename(partial, file);
      await writeFile(marker, actual, { mode: 0o600 });
      await this.#touch(marker);
      return file;
    } catch (error) {
      output.destroy();
      await rm(partial, { force: true });
      throw error;
    }
  }

  /**
   * Removes the versions no task has used since `olderThanUnixMs` (and what a crash left
   * half-downloaded that long ago); returns how many. A version being fetched is left alone.
   */
  async prune(olderThanUnixMs: number): Promise<number> {
    let removed = 0;
    for (const packageId of await readdir(this.#root).catch(() => [] as string[])) {
      const packageDir = path.join(this.#root, packageId);
      for (const version of await readdir(packageDir).catch(() => [] as string[])) {
        if (this.#inflight.has(`${packageId}/${version}`)) continue;
        const dir = path.join(packageDir, version);
        const used = await stat(path.join(dir, 'package.sha256')).catch(() => stat(dir).catch(() => null));
        if (!used || used.mtimeMs >= olderThanUnixMs) continue;
        await rm(dir, { recursive: true, force: true });
        removed++;
      }
      await rmdir(packageDir).catch(() => undefined); // only when no version is left
    }
    return removed;
  }
}

async function readMarker(marker: string): Promise<string | undefined> {
  try {
    return (await readFile(marker, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}
