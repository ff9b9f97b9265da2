/**
 * A control plane started with a master key other than its installation's refuses to start (exit
 * 78, naming the variable), before it serves or seals anything: started anyway, every Sensitive
 * value would fail to open at deploy time and what it sealed the other replicas could not open.
 * Real control planes on a database of their own (the machine's PostgreSQL).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, EXIT_CONFIGURATION, loadConfig } from '../../services/config.ts';
import { createDb } from '../../services/store/index.ts';
import { startServer, type RunningServer } from '../../services/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';

const ADMIN = { id: 'master-key-admin', key: 'master-key-admin-key-0123456789' };
const KEY_A = Buffer.alloc(32, 21).toString('base64');
const KEY_B = Buffer.alloc(32, 22).toString('base64');
const root = path.join(os.tmpdir(), `gantry-master-key-${process.pid}-${Date.now()}`);
let server: RunningServer | null = null;

afterEach(async () => {
  await server?.stop();
  server = null;
});

afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function environment(database: TestDatabase, masterKey: string): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    GANTRY_PORT: '0',
    GANTRY_GRPC_PORT: '0',
    GANTRY_METRICS_PORT: 'off',
    GANTRY_HOST: '127.0.0.1',
    GANTRY_DATA_DIR: path.join(root, database.name),
    GANTRY_MASTER_KEY: masterKey,
    GANTRY_BOOTSTRAP_ACCOUNT_ID: ADMIN.id,
    GANTRY_BOOTSTRAP_API_KEY: ADMIN.key,
  };
}

const start = (database: TestDatabase, masterKey: string) =>
  startServer(loadConfig(environment(database, masterKey)), pino({ level: 'silent' }));

async function post(url: string, body: unknown): Promise<Record<string, string>> {
  const response = await fetch(`${server!.url}${url}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  expect(response.status, url).toBe(200);
  return (await response.json()) as Record<string, string>;
}

/** A Sensitive project variable with one value, through the API of the running server. */
async function sensitiveValue(): Promise<void> {
  const workspaces = await fetch(`${server!.url}/api/workspace`, {
    headers: { authorization: `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}` },
  });
  const { workspaceId } = ((await workspaces.json()) as { workspaces: Array<{ workspaceId: string }> }).workspaces[0]!;
  const { projectId } = await post('/api/project', { workspaceId, name: 'Keyed' });
  const { variableId } = await post('/api/project/variable', { projectId, name: 'Token', variableType: 'Sensitive' });
  await post('/api/project/variable/value', { variableId, theValue: 'sealed-with-key-a' });
}

async function withDb<T>(database: TestDatabase, fn: (db: ReturnType<typeof createDb>) => Promise<T>): Promise<T> {
  const db = createDb(database.url);
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

describe('the master key', { timeout: 60_000 }, () => {
  it("is recorded by the installation's first start; another key is refused naming GANTRY_MASTER_KEY", async () => {
    const database = await createTestDatabase();
    server = await start(database, KEY_A);
    await sensitiveValue();
    await server.stop();
    server = null;
    const recorded = await withDb(database, (db) => db('master_key_check').select('key_check'));
    expect(recorded).toHaveLength(1);

    const refused = await start(database, KEY_B).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ConfigurationError);
    expect((refused as ConfigurationError).problems).toEqual([
      expect.stringMatching(/^GANTRY_MASTER_KEY is not the key this installation's Sensitive values are sealed with/),
    ]);
    // Nothing was written by the refused start, and the key itself is never in the message.
    expect(await withDb(database, (db) => db('master_key_check').select('key_check'))).toEqual(recorded);
    expect(String((refused as Error).message)).not.toContain(KEY_B);

    server = await start(database, KEY_A);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
  });

  it('of an installation from before the check must open what is sealed already, and is recorded then', async () => {
    const database = await createTestDatabase();
    server = await start(database, KEY_A);
    await sensitiveValue();
    await server.stop();
    server = null;
    // As a database migrated from an earlier build: sealed values, no check yet.
    await withDb(database, (db) => db('master_key_check').delete());

    await expect(start(database, KEY_B)).rejects.toThrow(
      "GANTRY_MASTER_KEY is not the key this installation's Sensitive values are sealed with (it cannot open them)",
    );
    expect(await withDb(database, (db) => db('master_key_check').count('* as n'))).toEqual([{ n: '0' }]);

    server = await start(database, KEY_A);
    expect(await withDb(database, (db) => db('master_key_check').count('* as n'))).toEqual([{ n: '1' }]);
  });

  it('in a data folder (GANTRY_MASTER_KEY unset) that is not 32 bytes is refused naming the file', async () => {
    const database = await createTestDatabase();
    const { GANTRY_MASTER_KEY: _key, ...withoutKey } = environment(database, KEY_A);
    const file = path.join(withoutKey.GANTRY_DATA_DIR!, 'master.key');
    await fs.mkdir(path.dirname(file), { recursive: true });
    await fs.writeFile(file, 'c2hvcnQ=', { mode: 0o600 });
    await expect(startServer(loadConfig(withoutKey), pino({ level: 'silent' }))).rejects.toThrow(
      new ConfigurationError([`${file} (GANTRY_MASTER_KEY unset) does not hold base64 of exactly 32 bytes`]),
    );
  });

  it('that does not match stops the process with exit status 78 and the reason on stderr', async () => {
    const database = await createTestDatabase();
    server = await start(database, KEY_A);
    await server.stop();
    server = null;

    const child = spawn(process.execPath, ['--import', 'tsx', 'services/main.ts'], {
      env: { PATH: process.env.PATH, ...environment(database, KEY_B), GANTRY_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A start that is not refused would serve on: killed, it fails the test instead of hanging it.
    const kill = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    clearTimeout(kill);
    expect(code, stderr).toBe(EXIT_CONFIGURATION);
    expect(stderr).toMatch(/^Gantry did not start: invalid configuration:\n {2}GANTRY_MASTER_KEY is not the key/);
    expect(stderr).not.toContain(KEY_B);
  });
});
