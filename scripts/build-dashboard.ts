/**
 * Builds the dashboard (dashboard/ → dist/dashboard) with Vite. `--if-stale` builds only when the
 * sources changed since the last build (a hash of every input file is kept beside the output), so
 * `npm start` (prestart) and the browser tests call it freely and pay only when needed.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import react from '@vitejs/plugin-react';
import { build } from 'vite';

const root = fileURLToPath(new URL('../', import.meta.url));
export const DASHBOARD_OUT = path.join(root, 'dist/dashboard');
const STAMP = path.join(DASHBOARD_OUT, '.source-hash');
const INPUTS = ['dashboard', 'client', 'scripts/build-dashboard.ts', 'package-lock.json'];

async function filesUnder(entry: string): Promise<string[]> {
  const full = path.join(root, entry);
  const stat = await fs.stat(full);
  if (!stat.isDirectory()) return [full];
  const entries = await fs.readdir(full, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

/** One hash over the names and contents of every input (mtimes change on checkout; contents do not). */
export async function sourceHash(): Promise<string> {
  const hash = createHash('sha256');
  const files = (await Promise.all(INPUTS.map(filesUnder))).flat().sort();
  for (const file of files)
    hash
      .update(path.relative(root, file))
      .update('\0')
      .update(await fs.readFile(file));
  return hash.digest('hex');
}

export async function isStale(): Promise<boolean> {
  const built = await fs.readFile(STAMP, 'utf8').catch(() => null);
  return built !== (await sourceHash());
}

/** Run it where NODE_ENV is unset or 'production' (vitest's 'test' yields React's development build). */
export async function buildDashboard(options: { ifStale?: boolean; quiet?: boolean } = {}): Promise<boolean> {
  const hash = await sourceHash();
  if (options.ifStale && (await fs.readFile(STAMP, 'utf8').catch(() => null)) === hash) return false;
  await build({
    root: path.join(root, 'dashboard'),
    configFile: false,
    mode: 'production',
    logLevel: options.quiet ? 'warn' : 'info',
    plugins: [react()],
    build: { outDir: DASHBOARD_OUT, emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1000 },
  });
  await fs.writeFile(STAMP, hash);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const built = await buildDashboard({ ifStale: process.argv.includes('--if-stale') });
  if (!built) process.stdout.write('dashboard: dist/dashboard is up to date\n');
}
