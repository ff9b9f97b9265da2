/**
 * Builds the agent as it ships to target machines: ONE JavaScript file with every dependency
 * inside, and agent.proto beside it (read at run time). No node_modules and no TypeScript loader
 * on the target (RSS ~65 MB instead of ~100 MB under tsx; an A/B at bench/deploy N = 50 showed
 * no CPU difference beyond this machine's noise).
 *
 *   npm run build:agent            # dist/agent/gantry-agent.mjs + dist/agent/gantry/agent/v1/agent.proto
 *
 * The end-to-end tests and bench/deploy run agents from this build, so what ships is what is tested.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_PROTO_FILE } from '../proto/load.ts';
import { bundleForNode } from './bundle-node.ts';

const repoRoot = fileURLToPath(new URL('../', import.meta.url));

export const AGENT_BUNDLE_NAME = 'gantry-agent.mjs';

/** Builds into outDir and returns the bundle's path. */
export function buildAgent(outDir: string): string {
  const outfile = path.join(outDir, AGENT_BUNDLE_NAME);
  bundleForNode(path.join(repoRoot, 'agent/main.ts'), outfile);
  // proto/load.ts reads the contract from the folder of the module that loads it: the bundle's.
  const proto = path.join(outDir, AGENT_PROTO_FILE);
  mkdirSync(path.dirname(proto), { recursive: true });
  copyFileSync(path.join(repoRoot, 'proto', AGENT_PROTO_FILE), proto);
  return outfile;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outfile = buildAgent(path.join(repoRoot, 'dist/agent'));
  process.stdout.write(`built ${path.relative(repoRoot, outfile)}\n`);
}
