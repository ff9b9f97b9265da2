// Tells zip, nupkg, tar and tar.gz apart by content, for packages whose format was not given.
import { open } from 'node:fs/promises';
import { ArchiveRefusedError } from './archive-refused-error.ts';
import { listZipNames } from './extract-zip.ts';

export const ARCHIVE_FORMATS = ['zip', 'nupkg', 'tar', 'tar.gz'] as const;
export type ArchiveFormat = (typeof ARCHIVE_FORMATS)[number];

export function isArchiveFormat(value: string): value is ArchiveFormat {
  return (ARCHIVE_FORMATS as readonly string[]).includes(value);
}

export async function detectArchiveFormat(archiveFile: string): Promise<ArchiveFormat> {
  const header = Buffer.alloc(512);
  const handle = await open(archiveFile, 'r');
  let length: number;
  try {
    ({ bytesRead: length } = await handle.read(header, 0, header.length, 0));
  } finally {
    await handle.close();
  }
  if (length >= 4 && header.readUInt16BE(0) === 0x504b) return (await isNupkg(archiveFile)) ? 'nupkg' : 'zip';
  if (length >= 2 && header[0] === 0x1f && header[1] === 0x8b) return 'tar.gz';
  if (length >= 262 && header.toString('latin1', 257, 262) === 'ustar') return 'tar';
  throw new ArchiveRefusedError('Archive refused: the package is not a zip, nupkg, tar or tar.gz archive');
}

/** A nupkg is a zip with OPC content types and a .nuspec at its root. */
async function isNupkg(archiveFile: string): Promise<boolean> {
  const names = await listZipNames(archiveFile);
  return (
    names.includes('[Content_Types].xml') &&
    names.some((name) => !name.includes('/') && name.toLowerCase().endsWith('.nuspec'))
  );
}
