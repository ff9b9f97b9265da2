/**
 * Builds the agent as it ships to target machines: ONE JavaScript file with every dependency
 * inside, and agent.proto beside it (read at run time). No node_modules and no TypeScript loader
 * on the target (RSS ~65 MB instead of ~100 MB under tsx; an A/B at bench/deploy N = 50 showed
 * no CPU difference beyond this machine's noise).
 *
 *   npm run build:agent            # dist/agent/gantry-agent.mjs + dist/agent/gantry/agent/v1/agent.proto
 *   tsx scripts/build-agent.ts --if-stale   # npm start (prestart): only when agent/ or proto/ changed
 *
 * Beside them: the versioned bundle the control plane serves to the install script
 * (gantry-agent-<version>.tar.gz: the same two files) and agent-manifest.json naming it with its
 * sha256. The end-to-end tests and bench/deploy run agents from this build, so what ships is what
 * is tested.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tar from 'tar';
import { AGENT_VERSION } from '../agent/version.ts';
import { AGENT_PROTO_FILE } from '../proto/load.ts';
import { bundleForNode } from './bundle-node.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

export const AGENT_BUNDLE_NAME = 'gantry-agent.mjs';
/** Read by the control plane (services/packages/agent-distribution.ts). */
export const AGENT_MANIFEST_NAME = 'agent-manifest.json';

export interface BuildAgentOptions {
  /** Build as another version (tests of upgrades); default agent/version.ts. */
  version?: string;
}

/** Builds into outDir and returns the single file's path. */
export function buildAgent(outDir: string, options: BuildAgentOptions = {}): string {
  const version = options.version ?? AGENT_VERSION;
  const outfile = path.join(outDir, AGENT_BUNDLE_NAME);
  bundleForNode(path.join(repoRoot, 'agent/main.ts'), outfile, {
    define: { __GANTRY_AGENT_VERSION__: JSON.stringify(version) },
  });
  // proto/load.ts reads the contract from the folder of the module that loads it: the bundle's.
  const proto = path.join(outDir, AGENT_PROTO_FILE);
  mkdirSync(path.dirname(proto), { recursive: true });
  copyFileSync(path.join(repoRoot, 'proto', AGENT_PROTO_FILE), proto);
  writeArchive(outDir, version);
  return outfile;
}

function writeArchive(outDir: string, version: string): void {
  for (const old of readdirSync(outDir)) if (/^gantry-agent-.*\.tar\.gz$/.test(old)) rmSync(path.join(outDir, old));
  const archive = `gantry-agent-${version}.tar.gz`;
  // Fixed times and owners: the same sources give the same bytes, so the same sha256.
  tar.c({ gzip: true, file: path.join(outDir, archive), cwd: outDir, sync: true, portable: true, mtime: new Date(0) }, [
    AGENT_BUNDLE_NAME,
    AGENT_PROTO_FILE,
  ]);
  const sha256 = createHash('sha256')
    .update(readFileSync(path.join(outDir, archive)))
    .digest('hex');
  const manifest = { version, archive, sha256, sourceHash: sourceHash() };
  writeFileSync(path.join(outDir, AGENT_MANIFEST_NAME), JSON.stringify(manifest, null, 2) + '\n');
}

/** One hash over the names and contents of everything the agent is built from. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const files = ['agent', 'proto', 'scripts/build-agent.ts', 'scripts/bundle-node.ts', 'package-lock.json']
    .flatMap((entry) => {
      const full = path.join(repoRoot, entry);
      if (!existsSync(full)) return [];
      if (!full.endsWith('.ts') && !full.endsWith('.json'))
        return readdirSync(full, { recursive: true, withFileTypes: true })
          .filter((e) => e.isFile())
          .map((e) => path.join(e.parentPath, e.name));
      return [full];
    })
    .sort();
  for (const file of files) hash.update(path.relative(repoRoot, file)).update('\0').update(readFileSync(file));
  return hash.digest('hex');
}

function isStale(outDir: string): boolean {
  try {
    const manifest = JSON.parse(readFileSync(path.join(outDir, AGENT_MANIFEST_NAME), 'utf8')) as {
      sourceHash?: string;
      archive?: string;
    };
    return manifest.sourceHash !== sourceHash() || !existsSync(path.join(outDir, manifest.archive ?? '-'));
  } catch {
    return true;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = path.join(repoRoot, 'dist/agent');
  if (process.argv.includes('--if-stale') && !isStale(outDir)) process.exit(0);
  const outfile = buildAgent(outDir);
  process.stdout.write(`built ${path.relative(repoRoot, outfile)}\n`);
}
