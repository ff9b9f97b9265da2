// tar / tar.gz extraction in one streaming pass with bounded memory, whatever the archive says.
// gzip is inflated by Node's zlib stream (on the thread pool, with backpressure: node-tar's own
// inflater is synchronous and buffered a 2 GiB package in memory); node-tar's Parser only reads
// headers; every entry is checked before a byte of it is written, and files are written here with
// at most a few open at once (node-tar's Unpack opened one per entry and grew to 2.6 GiB on
// 100,000 tiny files). A refused archive stops at once; the caller removes what was written.
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar';
import { ArchiveRefusedError } from './archive-refused-error.ts';
import { resolveInside, safeEntryPath } from './entry-path.ts';
import { RATIO_CHECK_MIN_BYTES, type ExtractLimits } from './limits.ts';

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);
/** Files being written at once: enough to overlap the disk's latency, few enough to stay small. */
const MAX_OPEN_WRITES = 8;

/** Extracts into `targetDir` (a fresh empty folder); gzip is detected from the content. */
export async function extractTar(archiveFile: string, targetDir: string, limits: ExtractLimits): Promise<void> {
  const compressedBytes = (await stat(archiveFile)).size;
  const source = createReadStream(archiveFile, { highWaterMark: 256 * 1024 });
  const gzipped = await startsWithGzipMagic(archiveFile);
  const input: Readable = gzipped ? source.pipe(createGunzip({ chunkSize: 64 * 1024 })) : source;
  if (gzipped) source.on('error', (error) => input.destroy(error));
  const writer = new EntryWriter(targetDir, limits);
  const parser = new tar.Parser({ strict: true });
  let failure: Error | undefined;
  const stopped = new AbortController();
  const fail = (error: unknown) => {
    failure ??= toRefusal(error);
    stopped.abort();
  };
  parser.on('entry', (entry: tar.ReadEntry) => writer.accept(entry, fail));
  parser.on('error', fail);
  parser.on('warn', (_code: string, message: string | Error) => fail(message));
  let bytes = 0;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > limits.maxTotalBytes + 1024 * 1024) fail(tooLarge(limits));
      else if (gzipped && bytes > RATIO_CHECK_MIN_BYTES && bytes / compressedBytes > limits.maxCompressionRatio)
        fail(
          new ArchiveRefusedError(
            `Archive refused: it expands more than ${limits.maxCompressionRatio} times (a decompression bomb)`,
          ),
        );
      if (failure) break;
      const more = parser.write(chunk);
      if (failure) break;
      if (!more) await once(parser, 'drain', { signal: stopped.signal }).catch(() => undefined);
      await writer.waitForRoom();
      if (failure) break;
    }
    if (!failure) {
      parser.end();
      await writer.finished();
    }
  } catch (error) {
    fail(error);
  } finally {
    input.destroy();
    source.destroy();
    await writer.abort();
  }
  if (failure) throw failure;
  if (writer.entries === 0) throw new ArchiveRefusedError('Archive refused: the tar archive holds no entries');
}

/** Writes checked entries to disk, a bounded number at a time. */
class EntryWriter {
  entries = 0;
  readonly #root: string;
  readonly #limits: ExtractLimits;
  readonly #writes = new Set<Promise<void>>();
  readonly #streams = new Set<WriteStream>();
  readonly #folders = new Set<string>();
  #declaredBytes = 0;
  /** An entry waiting for a write to finish before it is opened. */
  #waiting: (() => void) | null = null;

  constructor(root: string, limits: ExtractLimits) {
    this.#root = root;
    this.#limits = limits;
  }

  accept(entry: tar.ReadEntry, fail: (error: unknown) => void): void {
    try {
      this.#check(entry);
    } catch (error) {
      entry.resume();
      fail(error);
      return;
    }
    const relative = safeEntryPath(entry.path);
    const destination = resolveInside(this.#root, relative);
    if (entry.type === 'Directory') {
      entry.resume();
      this.#folder(destination);
      return;
    }
    this.#folder(path.dirname(destination));
    // The parser emits the next entry only once this one has ended: an entry that waits for room
    // holds the whole archive back, so no more than MAX_OPEN_WRITES files are ever open.
    const start = () => this.#write(entry, destination, fail);
    if (this.#writes.size < MAX_OPEN_WRITES) start();
    else this.#waiting = start;
  }

  #write(entry: tar.ReadEntry, destination: string, fail: (error: unknown) => void): void {
    // 'wx': never follow or overwrite anything already there (a duplicate entry fails here).
    const output = createWriteStream(destination, { flags: 'wx', mode: (entry.mode ?? 0) & 0o111 ? 0o700 : 0o600 });
    this.#streams.add(output);
    const written = new Promise<void>((resolve) => {
      const settle = (error?: Error | null) => {
        if (!this.#streams.delete(output)) return;
        this.#writes.delete(written);
        if (error)
          fail(
            (error as NodeJS.ErrnoException).code === 'EEXIST'
              ? new ArchiveRefusedError(`Archive refused: entry ${JSON.stringify(entry.path)} appears twice`)
              : error,
          );
        resolve();
        const next = this.#waiting;
        this.#waiting = null;
        next?.();
      };
      output.once('close', () => settle());
      output.once('error', settle);
      entry.once('error', settle);
    });
    this.#writes.add(written);
    entry.pipe(output);
  }

  #check(entry: tar.ReadEntry): void {
    safeEntryPath(entry.path);
    if (!ALLOWED_TYPES.has(entry.type)) {
      throw new ArchiveRefusedError(
        `Archive refused: entry ${JSON.stringify(entry.path)} is a ${describeType(entry.type)}`,
      );
    }
    if (++this.entries > this.#limits.maxEntries) {
      throw new ArchiveRefusedError(`Archive refused: more than ${this.#limits.maxEntries} entries`);
    }
    this.#declaredBytes += entry.size ?? 0;
    if (this.#declaredBytes > this.#limits.maxTotalBytes) throw tooLarge(this.#limits);
  }

  #folder(folder: string): void {
    if (this.#folders.has(folder)) return;
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    this.#folders.add(folder);
  }

  /** Resolves once fewer than MAX_OPEN_WRITES files are being written. */
  async waitForRoom(): Promise<void> {
    while (this.#writes.size >= MAX_OPEN_WRITES) await Promise.race(this.#writes);
  }

  async finished(): Promise<void> {
    while (this.#writes.size > 0 || this.#waiting) {
      if (this.#writes.size === 0) {
        const next = this.#waiting!;
        this.#waiting = null;
        next();
      }
      await Promise.race(this.#writes);
    }
  }

  /** Stops whatever is still being written (after a refusal) and waits for the files to close. */
  async abort(): Promise<void> {
    this.#waiting = null;
    for (const stream of this.#streams) stream.destroy();
    await this.finished();
  }
}

async function startsWithGzipMagic(file: string): Promise<boolean> {
  const head = createReadStream(file, { start: 0, end: 1 });
  const chunks: Buffer[] = [];
  for await (const chunk of head as AsyncIterable<Buffer>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  return bytes.length === 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function tooLarge(limits: ExtractLimits): ArchiveRefusedError {
  return new ArchiveRefusedError(
    `Archive refused: its content exceeds ${limits.maxTotalBytes} bytes${limits.totalBytesReason ? ` (${limits.totalBytesReason})` : ''}`,
  );
}

/** Parser complaints become refusals; the disk's own errors (ENOSPC, EACCES) are reported as they are. */
function toRefusal(error: unknown): Error {
  if (error instanceof ArchiveRefusedError) return error;
  if (error instanceof Error && typeof (error as NodeJS.ErrnoException).syscall === 'string') return error;
  const message = error instanceof Error ? error.message : String(error);
  return new ArchiveRefusedError(`Archive refused: not a readable tar archive (${message})`, { cause: error });
}

function describeType(type: string): string {
  if (type === 'SymbolicLink') return 'symbolic link';
  if (type === 'Link') return 'hard link';
  return `${type} entry, not a regular file or folder`;
}
