/**
 * Streams an upload to a private temporary file while hashing and counting it, so no package is
 * ever held in memory and the size limit is enforced on the bytes actually received.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { InvalidParameterError, newId } from '../core/index.ts';

export interface StagedFile {
  path: string;
  sizeBytes: number;
  sha256: string;
}

export const GIB = 1024 ** 3;

export function tooLarge(maxBytes: number, property: string): InvalidParameterError {
  const limit = maxBytes % GIB === 0 ? `${maxBytes / GIB} GiB` : `${maxBytes} bytes`;
  return new InvalidParameterError(`The package is larger than the ${limit} limit`, [
    { property, messages: [`larger than ${limit}`] },
  ]);
}

/**
 * Writes `source` to a new file in `dir`. On any failure (limit exceeded, client gone, disk full)
 * the partial file is deleted before the error propagates: a failed upload leaves nothing.
 */
export async function stageStream(
  source: Readable,
  dir: string,
  maxBytes: number,
  property: string,
): Promise<StagedFile> {
  // Until pipeline() listens, an error of the source (the client gone while the folder and file are
  // made) would be thrown as uncaught. It is kept by the errored stream: pipeline() rejects with it.
  source.on('error', () => undefined);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${newId()}.upload`);
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      sizeBytes += chunk.length;
      if (sizeBytes > maxBytes) return callback(tooLarge(maxBytes, property));
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  // The file is created before a byte is read. Left to a write stream, its open runs on the thread
  // pool while pipeline() may already have rejected on the meter's first chunk: an open landing
  // after the rm below left the file behind for good (one refused upload in ~1,500).
  const handle = await fs.open(file, 'wx', 0o600);
  try {
    await pipeline(source, meter, handle.createWriteStream());
  } catch (error) {
    await fs.rm(file, { force: true });
    throw error;
  }
  return { path: file, sizeBytes, sha256: hash.digest('hex') };
}

export async function discard(staged: StagedFile | null): Promise<void> {
  if (staged) await fs.rm(staged.path, { force: true });
}
