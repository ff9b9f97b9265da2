/** One esbuild setting for the single-file builds (agent, CLI): every dependency inside, ESM, Node 20. */
import { buildSync } from 'esbuild';

// Bundled CommonJS dependencies call require(); an ES module has none of its own.
const REQUIRE_SHIM =
  "import { createRequire as __gantryRequire } from 'node:module'; const require = __gantryRequire(import.meta.url);";

export function bundleForNode(
  entryPoint: string,
  outfile: string,
  options: { shebang?: boolean; define?: Record<string, string> } = {},
): void {
  buildSync({
    entryPoints: [entryPoint],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    ...(options.define ? { define: options.define } : {}),
    banner: { js: (options.shebang ? '#!/usr/bin/env node\n' : '') + REQUIRE_SHIM },
  });
}
