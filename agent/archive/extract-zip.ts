// Streaming zip/nupkg extraction with yauzl: the central directory is read with random access and
// each entry is inflated straight to disk, so memory stays flat for 1 GiB packages.
import { mkdir, open } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl, { type Entry, type ZipFile } from 'yauzl';
import { ArchiveRefusedError } from './archive-refused-error.ts';
import { resolveInside, safeEntryPath } from './entry-path.ts';
import { RATIO_CHECK_MIN_BYTES, type ExtractLimits } from './limits.ts';

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

export interface ZipExtractOptions {
  /** NuGet package: skip the OPC parts and URL-decode entry names. */
  readonly nupkg: boolean;
  readonly limits: ExtractLimits;
}

/** Extracts into `targetDir`, which must be a fresh empty folder (files are opened with 'wx'). */
export async function extractZip(archiveFile: string, targetDir: string, options: ZipExtractOptions): Promise<void> {
  const zip = await openZip(archiveFile);
  try {
    if (zip.entryCount > options.limits.maxEntries) {
      throw new ArchiveRefusedError(
        `Archive refused: ${zip.entryCount} entries exceed the limit of ${options.limits.maxEntries}`,
      );
    }
    const budget = { bytes: 0 };
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: Entry) => {
        extractEntry(zip, entry, targetDir, options, budget).then(() => zip.readEntry(), reject);
      });
      zip.readEntry();
    });
  } finally {
    if (zip.isOpen) zip.close();
  }
}

/** The uncompressed size the central directory declares for all entries together. */
export async function declaredZipBytes(archiveFile: string): Promise<number> {
  const zip = await openZip(archiveFile);
  let total = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: Entry) => {
        total += entry.uncompressedSize;
        zip.readEntry();
      });
      zip.readEntry();
    });
  } finally {
    if (zip.isOpen) zip.close();
  }
  return total;
}

/** Lists entry names (decoded, unchecked): used to tell a nupkg from a plain zip. */
export async function listZipNames(archiveFile: string): Promise<string[]> {
  const zip = await openZip(archiveFile);
  const names: string[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: Entry) => {
        names.push(entryName(entry));
        zip.readEntry();
      });
      zip.readEntry();
    });
  } finally {
    if (zip.isOpen) zip.close();
  }
  return names;
}

function openZip(archiveFile: string): Promise<ZipFile> {
  // decodeStrings: false so that OUR path checks (with our messages) run on every name; yauzl's
  // own validation would otherwise reject some names before we see them.
  return yauzl.openPromise(archiveFile, {
    lazyEntries: true,
    autoClose: true,
    decodeStrings: false,
    validateEntrySizes: true,
    strictFileNames: false,
  });
}

function entryName(entry: Entry): string {
  const raw = entry.fileNameRaw;
  return yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, raw, entry.extraFields, false);
}

async function extractEntry(
  zip: ZipFile,
  entry: Entry,
  targetDir: string,
  options: ZipExtractOptions,
  budget: { bytes: number },
): Promise<void> {
  const rawName = entryName(entry);
  const name = options.nupkg ? decodeNupkgName(rawName) : rawName;
  const relative = safeEntryPath(name);
  if (relative === '' || (options.nupkg && isOpcPart(relative))) return;

  const shown = JSON.stringify(name);
  const fileType = (entry.externalFileAttributes >>> 16) & S_IFMT;
  if (fileType === S_IFLNK) throw new ArchiveRefusedError(`Archive refused: entry ${shown} is a symbolic link`);
  if (fileType !== 0 && fileType !== S_IFREG && fileType !== S_IFDIR) {
    throw new ArchiveRefusedError(`Archive refused: entry ${shown} is not a regular file or folder`);
  }
  if (entry.isEncrypted()) throw new ArchiveRefusedError(`Archive refused: entry ${shown} is encrypted`);

  const destination = resolveInside(targetDir, relative);
  const isDirectory = /[/\\]$/.test(name) || fileType === S_IFDIR;
  if (isDirectory) {
    await mkdir(destination, { recursive: true, mode: 0o700 });
    return;
  }

  budget.bytes += entry.uncompressedSize;
  if (budget.bytes > options.limits.maxTotalBytes) {
    throw new ArchiveRefusedError(`Archive refused: its content exceeds ${options.limits.maxTotalBytes} bytes`);
  }
  const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
  if (entry.uncompressedSize >= RATIO_CHECK_MIN_BYTES && ratio > options.limits.maxCompressionRatio) {
    throw new ArchiveRefusedError(`Archive refused: entry ${shown} has a compression ratio of ${Math.round(ratio)}:1`);
  }

  await mkdir(path.dirname(destination), { recursive: true, mode: 0o700 });
  const isExecutable = ((entry.externalFileAttributes >>> 16) & 0o111) !== 0;
  // 'wx': never follow or overwrite anything already there (a duplicate entry fails here). Opened
  // before a byte is read: a write stream opens on the thread pool, and an entry refused at its
  // first chunk could have the staging folder's removal run before that open created the file.
  const file = await open(destination, 'wx', isExecutable ? 0o700 : 0o600).catch((error: unknown) => {
    if (isErrnoCode(error, 'EEXIST')) throw new ArchiveRefusedError(`Archive refused: entry ${shown} appears twice`);
    throw error;
  });
  const output = file.createWriteStream();
  try {
    await pipeline(await zip.openReadStreamPromise(entry), capBytes(entry.uncompressedSize, shown), output);
  } finally {
    output.destroy();
  }
}

/** Belt and braces next to yauzl's validateEntrySizes: never write more than declared. */
function capBytes(declared: number, shown: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > declared) callback(new ArchiveRefusedError(`Archive refused: entry ${shown} is larger than declared`));
      else callback(null, chunk);
    },
  });
}

/** NuGet stores part names URI-escaped (`my%20file.txt`). Decode BEFORE the path check. */
function decodeNupkgName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch (error) {
    throw new ArchiveRefusedError(`Archive refused: entry ${JSON.stringify(name)} has an invalid %-escape`, {
      cause: error,
    });
  }
}

/** Open Packaging Convention bookkeeping that is not package content. */
function isOpcPart(relative: string): boolean {
  const lower = relative.toLowerCase();
  return (
    lower === '[content_types].xml' ||
    lower === '_rels' ||
    lower.startsWith('_rels/') ||
    lower === 'package' ||
    lower.startsWith('package/')
  );
}

function isErrnoCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
