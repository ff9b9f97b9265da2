// Public surface of agent/archive: safe extraction of nupkg/zip/tar/tar.gz. Imports nothing from
// the rest of the agent. An extraction either completes or leaves no target folder at all.
import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { detectArchiveFormat, type ArchiveFormat } from './detect-format.ts';
import { extractTar } from './extract-tar.ts';
import { extractZip } from './extract-zip.ts';
import { DEFAULT_EXTRACT_LIMITS, type ExtractLimits } from './limits.ts';

export { ArchiveRefusedError } from './archive-refused-error.ts';
export { safeEntryPath } from './entry-path.ts';
export { ARCHIVE_FORMATS, detectArchiveFormat, isArchiveFormat, type ArchiveFormat } from './detect-format.ts';
export { DEFAULT_EXTRACT_LIMITS, type ExtractLimits } from './limits.ts';

export interface ExtractOptions {
  /** Detected from the content when omitted. */
  readonly format?: ArchiveFormat;
  readonly limits?: Partial<ExtractLimits>;
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
  const limits: ExtractLimits = { ...DEFAULT_EXTRACT_LIMITS, ...options.limits };
  const format = options.format ?? (await detectArchiveFormat(archiveFile));
  await mkdir(path.dirname(target), { recursive: true });
  const staging = `${target}.partial-${randomBytes(6).toString('hex')}`;
  await mkdir(staging);
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

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}
