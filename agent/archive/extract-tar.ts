// tar / tar.gz extraction with node-tar. node-tar's defaults only WARN on hostile entries and
// still resolve (stack-notes §5.3), so every entry is checked first, and the extraction itself
// runs strict with links filtered out as a second line of defence.
import * as tar from 'tar';
import { ArchiveRefusedError } from './archive-refused-error.ts';
import { safeEntryPath } from './entry-path.ts';
import type { ExtractLimits } from './limits.ts';

const ALLOWED_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

/** Extracts into `targetDir` (a fresh empty folder); gzip is detected by node-tar itself. */
export async function extractTar(archiveFile: string, targetDir: string, limits: ExtractLimits): Promise<void> {
  await precheckTar(archiveFile, limits);
  const refusals: string[] = [];
  await tar.x({
    file: archiveFile,
    cwd: targetDir,
    strict: true,
    preserveOwner: false,
    maxDecompressionRatio: limits.maxCompressionRatio,
    filter: (entryPath, entry) => {
      const type = 'type' in entry ? entry.type : 'File';
      if (ALLOWED_TYPES.has(type)) return true;
      refusals.push(`Archive refused: entry ${JSON.stringify(entryPath)} is a ${describeType(type)}`);
      return false;
    },
  });
  const first = refusals[0];
  if (first !== undefined) throw new ArchiveRefusedError(first);
}

/** Reads every header without writing anything; throws on the first hostile or excess entry. */
async function precheckTar(archiveFile: string, limits: ExtractLimits): Promise<void> {
  let problem: ArchiveRefusedError | undefined;
  let entries = 0;
  let bytes = 0;
  try {
    await tar.t({
      file: archiveFile,
      strict: true,
      maxDecompressionRatio: limits.maxCompressionRatio,
      onReadEntry: (entry) => {
        entry.resume();
        if (problem) return;
        problem = checkEntry(entry.path, entry.type, ++entries, (bytes += entry.size ?? 0), limits);
      },
    });
  } catch (error) {
    if (error instanceof ArchiveRefusedError) throw error;
    throw new ArchiveRefusedError(`Archive refused: not a readable tar archive (${errorMessage(error)})`, {
      cause: error,
    });
  }
  if (problem) throw problem;
  if (entries === 0) throw new ArchiveRefusedError('Archive refused: the tar archive holds no entries');
}

function checkEntry(
  entryPath: string,
  type: string,
  entries: number,
  bytes: number,
  limits: ExtractLimits,
): ArchiveRefusedError | undefined {
  try {
    safeEntryPath(entryPath);
  } catch (error) {
    if (error instanceof ArchiveRefusedError) return error;
    throw error;
  }
  if (!ALLOWED_TYPES.has(type)) {
    return new ArchiveRefusedError(`Archive refused: entry ${JSON.stringify(entryPath)} is a ${describeType(type)}`);
  }
  if (entries > limits.maxEntries) {
    return new ArchiveRefusedError(`Archive refused: more than ${limits.maxEntries} entries`);
  }
  if (bytes > limits.maxTotalBytes) {
    return new ArchiveRefusedError(`Archive refused: content exceeds ${limits.maxTotalBytes} bytes`);
  }
  return undefined;
}

function describeType(type: string): string {
  if (type === 'SymbolicLink') return 'symbolic link';
  if (type === 'Link') return 'hard link';
  return `${type} entry, not a regular file or folder`;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
