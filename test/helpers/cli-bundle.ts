/** The CLI as it ships (scripts/build-cli.ts), built once per test process: tests run the artifact. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildCli } from '../../scripts/build-cli.ts';

let built: string | undefined;

export function cliBundle(): string {
  if (!built) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-cli-build-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    built = buildCli(dir);
  }
  return built;
}
