/**
 * Checks that a staged package is a readable archive of its type before it enters the feed
 * (contract §6), so a truncated or mislabelled upload fails at upload time, not on every agent —
 * and refuses what a default agent would refuse to unpack (a decompression bomb, content over the
 * unpacked-size cap), with memory bounded whatever the archive says.
 * zip/nupkg: yauzl walks the central directory (random access, flat memory even for 1 GiB) and
 * sums the declared sizes. tar/tar.gz: one streaming pass — Node's zlib inflates on the thread
 * pool with backpressure (node-tar's own inflater is synchronous: a 2 MB gzip bomb blocked the
 * event loop for 5 s and took RSS to 1.2 GiB), node-tar's Parser reads the headers, bodies are
 * discarded, and the pass stops as soon as a cap is crossed.
 */
import { once } from 'node:events';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar';
import yauzl from 'yauzl';
import { InvalidParameterError, toError } from '../core/index.ts';
import { PackageType } from './file-name.ts';

/** The unpacked-size cap of a default agent: 4 GiB, or 10 × the package when that is more. */
export const MIN_UNPACKED_BYTES = 4 * 1024 ** 3;
const UNPACKED_PER_PACKAGE_BYTE = 10;
/** Above this inflation a package is a decompression bomb (node-tar's and the agent's limit). */
const MAX_COMPRESSION_RATIO = 1000;
/** Small entries are not ratio-checked: a few KiB of zeros compress absurdly well. */
const RATIO_CHECK_MIN_BYTES = 1024 * 1024;

/** Why an archive is refused (the message ends up in the 400). */
class Refusal extends Error {}

function unpackedCap(packageBytes: number): number {
  return Math.max(MIN_UNPACKED_BYTES, UNPACKED_PER_PACKAGE_BYTE * packageBytes);
}

function walkZip(file: string, packageBytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true, autoClose: true, validateEntrySizes: true }, (openError, zip) => {
      if (openError || !zip) return reject(openError ?? new Error('unreadable zip'));
      let entries = 0;
      let declared = 0;
      zip.on('entry', (entry: yauzl.Entry) => {
        entries++;
        declared += entry.uncompressedSize;
        const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
        if (entry.uncompressedSize >= RATIO_CHECK_MIN_BYTES && ratio > MAX_COMPRESSION_RATIO) {
          zip.close();
          return reject(new Refusal(`an entry expands ${Math.round(ratio)} times (a decompression bomb)`));
        }
        if (declared > unpackedCap(packageBytes)) {
          zip.close();
          return reject(new Refusal(`its content exceeds ${unpackedCap(packageBytes)} bytes`));
        }
        zip.readEntry();
      });
      zip.on('end', () => resolve(entries));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

async function walkTar(file: string, packageBytes: number): Promise<number> {
  const source = createReadStream(file, { highWaterMark: 1024 * 1024 });
  const gzipped = await startsWithGzipMagic(file);
  const input: Readable = gzipped ? source.pipe(createGunzip({ chunkSize: 256 * 1024 })) : source;
  if (gzipped) source.on('error', (error) => input.destroy(error));
  const parser = new tar.Parser({ strict: true });
  const stopped = new AbortController();
  let failure: Error | undefined;
  const fail = (error: unknown) => {
    failure ??= toError(error);
    stopped.abort();
  };
  let entries = 0;
  parser.on('entry', (entry: tar.ReadEntry) => {
    entries++;
    entry.resume();
  });
  parser.on('error', fail);
  parser.on('warn', (_code: string, message: string | Error) => fail(message));
  const cap = unpackedCap(packageBytes);
  let bytes = 0;
  try {
    for await (const chunk of input as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      if (bytes > cap) fail(new Refusal(`its content exceeds ${cap} bytes`));
      else if (gzipped && bytes > RATIO_CHECK_MIN_BYTES && bytes / packageBytes > MAX_COMPRESSION_RATIO)
        fail(new Refusal(`it expands more than ${MAX_COMPRESSION_RATIO} times (a decompression bomb)`));
      if (failure) break;
      if (!parser.write(chunk)) await once(parser, 'drain', { signal: stopped.signal }).catch(() => undefined);
      if (failure) break;
    }
    // Synchronous: a truncated or unrecognized archive is reported here (strict: as an error).
    if (!failure) parser.end();
  } finally {
    input.destroy();
    source.destroy();
  }
  if (failure) throw failure;
  return entries;
}

async function startsWithGzipMagic(file: string): Promise<boolean> {
  const chunks: Buffer[] = [];
  for await (const chunk of createReadStream(file, { start: 0, end: 1 }) as AsyncIterable<Buffer>) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  return bytes.length === 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/** Throws 400 naming `property` when the file is not a readable archive of `type`, or a refused one. */
export async function checkArchive(file: string, type: PackageType, property: string): Promise<void> {
  try {
    const packageBytes = (await stat(file)).size;
    const entries =
      type === PackageType.Zip || type === PackageType.Nupkg
        ? await walkZip(file, packageBytes)
        : await walkTar(file, packageBytes);
    if (entries === 0) throw new Error('the archive has no entries');
  } catch (error) {
    if (error instanceof Refusal) {
      throw new InvalidParameterError(`The package is refused: ${error.message}`, [
        { property, messages: [error.message] },
      ]);
    }
    const reason = toError(error).message;
    throw new InvalidParameterError(`The package is not a readable ${type} archive: ${reason}`, [
      { property, messages: [`not a readable ${type} archive`] },
    ]);
  }
}
