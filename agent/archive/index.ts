// Public surface of agent/archive: safe extraction of nupkg/zip/tar/tar.gz. Imports nothing from
// the rest of the agent. An extraction either completes or leaves no target folder at all.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { detectArchiveFormat, type ArchiveFormat } from './detect-format.ts';
import { extractTar } from './extract-tar.ts';
import { declaredZipBytes, extractZip } from './extract-zip.ts';
import { ArchiveRefusedError } from './archive-refused-error.ts';
import {
  DEFAULT_EXTRACT_LIMITS,
  DEFAULT_MIN_UNPACKED_BYTES,
  DISK_RESERVE_BYTES,
  UNPACKED_PER_PACKAGE_BYTE,
  type ExtractLimits,
} from './limits.ts';

export { ArchiveRefusedError } from './archive-refused-error.ts';
export { safeEntryPath } from './entry-path.ts';
export { ARCHIVE_FORMATS, detectArchiveFormat, isArchiveFormat, type ArchiveFormat } from './detect-format.ts';
export { DEFAULT_EXTRACT_LIMITS, DEFAULT_MIN_UNPACKED_BYTES, type ExtractLimits } from './limits.ts';

export interface ExtractOptions {
  /** Detected from the content when omitted. */
  readonly format?: ArchiveFormat;
  /**
   * Most bytes the unpacked content may hold (GANTRY_AGENT_MAX_UNPACKED_BYTES); by default 4 GiB,
   * or 10 × the package when that is more. Never more than the disk has free (minus a reserve).
   */
  readonly maxUnpackedBytes?: number;
  readonly limits?: Partial<Omit<ExtractLimits, 'maxTotalBytes' | 'totalBytesReason'>>;
}

/**
 * Extracts `archiveFile` into `targetDir`, which must not exist yet. Work happens in a sibling
 * `<target>.partial-*` folder that is renamed into place only on success and removed on any
 * failure, so a refused archive leaves nothing behind.
 */
export async function extractArchive(
  archiveFile: string,
  targetDir: string,
  options: ExtractOptions = {},
): Promise<ArchiveFormat> {
  const target = path.resolve(targetDir);
  if (await exists(target)) throw new Error(`Extraction target ${target} already exists`);
  const format = options.format ?? (await detectArchiveFormat(archiveFile));
  await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
  const limits = await limitsFor(archiveFile, path.dirname(target), options);
  if (format === 'zip' || format === 'nupkg') {
    // The central directory declares every size (yauzl checks each against what it inflates):
    // a package the disk cannot hold is refused before a byte is written.
    const declared = await declaredZipBytes(archiveFile);
    if (declared > limits.maxTotalBytes) {
      throw new ArchiveRefusedError(
        `Archive refused: its content (${declared} bytes) exceeds ${limits.maxTotalBytes} bytes${limits.totalBytesReason ? ` (${limits.totalBytesReason})` : ''}`,
      );
    }
  }
  const staging = `${target}.partial-${randomBytes(6).toString('hex')}`;
  await mkdir(staging, { mode: 0o700 });
  try {
    if (format === 'zip' || format === 'nupkg')
      await extractZip(archiveFile, staging, { nupkg: format === 'nupkg', limits });
    else await extractTar(archiveFile, staging, limits);
    await rename(staging, target);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return format;
}

/** The caps for this archive: the configured or default size cap, bounded by the free disk. */
async function limitsFor(archiveFile: string, folder: string, options: ExtractOptions): Promise<ExtractLimits> {
  const packageBytes = (await stat(archiveFile)).size;
  const cap =
    options.maxUnpackedBytes ?? Math.max(DEFAULT_MIN_UNPACKED_BYTES, UNPACKED_PER_PACKAGE_BYTE * packageBytes);
  const disk = await statfs(folder);
  const free = Math.max(0, disk.bavail * disk.bsize - DISK_RESERVE_BYTES);
  return {
    ...DEFAULT_EXTRACT_LIMITS,
    ...options.limits,
    maxTotalBytes: Math.min(cap, free),
    ...(free < cap
      ? { totalBytesReason: `free disk space in ${folder}, keeping ${DISK_RESERVE_BYTES} bytes in reserve` }
      : {}),
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
