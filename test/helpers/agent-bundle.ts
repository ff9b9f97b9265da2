/** The agent as it ships (scripts/build-agent.ts), built once per test process: tests run the artifact. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildAgent } from '../../scripts/build-agent.ts';

let built: string | undefined;

export function agentBundle(): string {
  if (!built) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-agent-build-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    built = buildAgent(dir);
  }
  return built;
}
