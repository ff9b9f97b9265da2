/** Every file under a folder, relative to it, recursively (a missing folder: none). */
import fs from 'node:fs/promises';
import path from 'node:path';

export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}
