/**
 * Builds the CLI as it ships: ONE JavaScript file with every dependency inside
 * (dist/cli/gantry.mjs), which needs nothing but Node.js 20.
 *
 *   npm run build:cli            # dist/cli/gantry.mjs
 *
 * The CLI tests (test/cli/) and bench/cli run this build, so what ships is what is tested.
 */
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from './bundle-node.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

export const CLI_BUNDLE_NAME = 'gantry.mjs';

/** Builds into outDir and returns the bundle's path. */
export function buildCli(outDir: string): string {
  const outfile = path.join(outDir, CLI_BUNDLE_NAME);
  bundleForNode(path.join(repoRoot, 'cli/gantry.ts'), outfile, { shebang: true });
  chmodSync(outfile, 0o755);
  return outfile;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outfile = buildCli(path.join(repoRoot, 'dist/cli'));
  process.stdout.write(`built ${path.relative(repoRoot, outfile)}\n`);
}
