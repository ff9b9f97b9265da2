/**
 * `npm start` as containers and process managers run it (docker-compose.yml's replicas, the
 * Dockerfile's CMD): they stop it by sending SIGTERM to npm, which passes it on to its child only.
 * That child must be the control plane itself, not a shell around it: a shell dies of the signal
 * and leaves the plane (and its embedded PostgreSQL) running, unstopped, until a SIGKILL.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/index.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { isAlive } from '../helpers/processes.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { ADMIN, tempDir } from './harness.ts';

/** The process's children, and theirs, from /proc (Linux). */
function descendants(pid: number): number[] {
  const children = (() => {
    try {
      return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return [];
    }
  })();
  return children.flatMap((child) => [child, ...descendants(child)]);
}

const leftovers: number[] = [];

afterAll(() => {
  for (const pid of leftovers) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
});

describe('npm start', { timeout: 120_000 }, () => {
  it('stops the control plane, which says so, when npm is sent SIGTERM', async () => {
    const database = await createTestDatabase();
    const http = await freePort();
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      GANTRY_PORT: String(http),
      GANTRY_GRPC_PORT: String(await freePort([http])),
      GANTRY_METRICS_PORT: 'off',
      GANTRY_HOST: '127.0.0.1',
      GANTRY_DATA_DIR: tempDir('gantry-npm-start-'),
      GANTRY_BOOTSTRAP_ACCOUNT_ID: ADMIN.id,
      GANTRY_BOOTSTRAP_API_KEY: ADMIN.key,
      GANTRY_MASTER_KEY: Buffer.alloc(32, 5).toString('base64'),
      GANTRY_LOG_LEVEL: 'info',
    };
    // Without the prestart builds (the dashboard's and the agent's): only the start itself is tested.
    const npm = spawn('npm', ['start', '--ignore-scripts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    await waitFor(
      async () => {
        if (npm.exitCode !== null) throw new Error(`npm start exited ${npm.exitCode}:\n${output}`);
        const response = await fetch(`http://127.0.0.1:${http}/api/openapi.json`).catch(() => null);
        return response?.ok === true;
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the control plane to listen' },
    );
    const started = descendants(npm.pid!);
    leftovers.push(...started);
    expect(started.length).toBeGreaterThan(0);

    npm.kill('SIGTERM');
    await exited;
    await waitFor(() => started.every((pid) => !isAlive(pid)), {
      timeoutMs: 20_000,
      intervalMs: 100,
      description: `npm's processes ${started.join(', ')} to end`,
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${output}`);
    });
    expect(output).toMatch(/"signal":"SIGTERM","msg":"stopping"/);
  });
});
