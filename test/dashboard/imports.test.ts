/**
 * dashboard/ reaches the server only over HTTP: its sources import their own files, client/ (the
 * typed client generated from the OpenAPI document) and npm packages — never services/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const IMPORT = /^\s*(?:import|export)\s+(?:type\s+)?[^'"]*?from\s+'([^']+)'|^\s*import\s+'([^']+)'/gm;

describe('dashboard imports', () => {
  it('reach only dashboard/, client/ and packages', () => {
    const sources = fs
      .readdirSync(path.join(root, 'dashboard/src'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && /\.tsx?$/.test(e.name))
      .map((e) => path.join(e.parentPath, e.name));
    const seen: string[] = [];
    const outside: string[] = [];
    for (const file of sources) {
      for (const match of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = match[1] ?? match[2]!;
        seen.push(target);
        if (!target.startsWith('.')) continue;
        const rel = path
          .relative(root, path.resolve(path.dirname(file), target))
          .split(path.sep)
          .join('/');
        if (!rel.startsWith('dashboard/') && !rel.startsWith('client/'))
          outside.push(`${path.relative(root, file)} → ${rel}`);
      }
    }
    expect(outside).toEqual([]);
    expect(seen).toContain('../../../client/index.ts');
    expect(seen.length).toBeGreaterThan(40);
  });
});
