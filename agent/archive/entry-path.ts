// Pure checks on an archive entry's name: the name must stay inside the target folder on every
// OS, whatever separators or prefixes the archive author chose (zip-slip, CVE-2018-1002200).
import path from 'node:path';
import { ArchiveRefusedError } from './archive-refused-error.ts';

/**
 * Returns the entry's path relative to the target, with `/` separators ('' for the root itself),
 * or throws ArchiveRefusedError. Backslashes count as separators, so `..\..\x` is caught even on
 * POSIX, and `C:x`, `/x`, `\\server\x` are refused rather than silently re-rooted.
 */
export function safeEntryPath(name: string): string {
  const shown = JSON.stringify(name);
  if (name.includes('\0')) throw refused(shown, 'contains a NUL character');
  const unified = name.replace(/\\/g, '/');
  if (unified.startsWith('/')) throw refused(shown, 'is an absolute path');
  if (/^[A-Za-z]:/.test(unified)) throw refused(shown, 'starts with a drive letter');
  const parts = unified.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw refused(shown, 'escapes the target folder');
  return parts.join('/');
}

/** Absolute path of `relative` under `root`, re-checked after resolution (defence in depth). */
export function resolveInside(root: string, relative: string): string {
  const resolvedRoot = path.resolve(root);
  const resolved = path.resolve(resolvedRoot, relative);
  if (resolved !== resolvedRoot && !resolved.startsWith(resolvedRoot + path.sep)) {
    throw refused(JSON.stringify(relative), 'escapes the target folder');
  }
  return resolved;
}

function refused(shownName: string, why: string): ArchiveRefusedError {
  return new ArchiveRefusedError(`Archive refused: entry ${shownName} ${why}`);
}
