/**
 * The layering of README's folder map, enforced: every import in services/ and agent/ follows the
 * allowed arrows. The table below is the architecture; change it only with the design.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** concern → concerns it may import at run time. Type-only imports may also reach `typesFrom`. */
const ALLOWED: Record<string, { runtime: string[]; typesFrom?: string[] }> = {
  'services/core': { runtime: [] },
  'services/store': { runtime: ['services/core'] },
  'services/domain': { runtime: ['services/core', 'services/store'] },
  'services/bus': { runtime: ['services/core'] },
  'services/engine': { runtime: ['services/core', 'services/domain', 'services/store', 'services/bus'] },
  'services/packages': { runtime: ['services/core', 'services/store', 'services/domain'] },
  'services/gateway': {
    runtime: ['services/core', 'services/store', 'services/bus', 'proto'],
    typesFrom: ['services/engine'],
  },
  'services/api': {
    runtime: ['services/core', 'services/domain', 'services/engine', 'services/packages'],
    typesFrom: ['services/store'],
  },
  agent: { runtime: ['proto'] },
  proto: { runtime: [] },
  // The CLI reaches the server only over HTTP, through the generated client (design §7).
  cli: { runtime: ['client'] },
  client: { runtime: [] },
};

/** Composition roots: the only files that may import every concern. */
const ROOTS = new Set([
  'services/main.ts',
  'services/server.ts',
  'services/config.ts',
  'services/store/migrate-cli.ts',
]);

function concernOf(file: string): string | null {
  const rel = path.relative(root, file).split(path.sep).join('/');
  if (rel.startsWith('agent/')) return 'agent';
  if (rel.startsWith('proto/')) return 'proto';
  if (rel.startsWith('cli/')) return 'cli';
  if (rel.startsWith('client/')) return 'client';
  const match = /^services\/([^/]+)\//.exec(rel);
  return match ? `services/${match[1]}` : null;
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'/gm;

function violations(): string[] {
  const found: string[] = [];
  for (const file of [
    ...sourceFiles('services'),
    ...sourceFiles('agent'),
    ...sourceFiles('proto'),
    ...sourceFiles('cli'),
    ...sourceFiles('client'),
  ]) {
    const rel = path.relative(root, file).split(path.sep).join('/');
    if (ROOTS.has(rel)) continue;
    const from = concernOf(file);
    if (!from) continue;
    const rules = ALLOWED[from];
    if (!rules) {
      found.push(`${rel}: concern ${from} has no rule`);
      continue;
    }
    for (const match of fs.readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const typeOnly = match[2] !== undefined;
      const target = path.resolve(path.dirname(file), match[3]!);
      const targetRel = path.relative(root, target).split(path.sep).join('/');
      if (ROOTS.has(targetRel)) {
        found.push(`${rel} imports the composition root ${targetRel}`);
        continue;
      }
      const to = concernOf(target);
      if (!to || to === from) continue;
      const allowed = rules.runtime.includes(to) || (typeOnly && (rules.typesFrom ?? []).includes(to));
      if (!allowed) found.push(`${rel} → ${targetRel}${typeOnly ? ' (type)' : ''}`);
    }
  }
  return found;
}

describe('import rules', () => {
  it('keeps every import inside the allowed arrows', () => {
    expect(violations()).toEqual([]);
  });

  it('reads imports at all (the rule table is not vacuous)', () => {
    const api = sourceFiles('services/api')
      .map((f) => fs.readFileSync(f, 'utf8'))
      .join('\n');
    expect([...api.matchAll(IMPORT)].length).toBeGreaterThan(50);
  });
});
