/**
 * A control plane started with a master key other than its installation's refuses to start (exit
 * 78, naming the variable), before it serves or seals anything: started anyway, every Sensitive
 * value would fail to open at deploy time and what it sealed the other replicas could not open.
 * And `npm run rotate-master-key`, run as a process: it reseals every sealed value with the new
 * key and records it, refuses while a control plane runs or with a key that is not the
 * installation's (changing nothing), and with the key in the data folder makes the new one there;
 * a start finishes a rotation interrupted between its commit and the key file's rename.
 * Real control planes on a database of their own (the machine's PostgreSQL).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, EXIT_CONFIGURATION, loadConfig } from '../../services/config.ts';
import { createSecretBox, masterKeyCheck } from '../../services/core/index.ts';
import { createDb, REPLICA_PRESENCE_LOCK_KEY } from '../../services/store/index.ts';
import { startServer, type RunningServer } from '../../services/server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/database.ts';
import { waitFor } from '../helpers/wait-for.ts';

const ADMIN = { id: 'master-key-admin', key: 'master-key-admin-key-0123456789' };
const KEY_A = Buffer.alloc(32, 21).toString('base64');
const KEY_B = Buffer.alloc(32, 22).toString('base64');
const KEY_C = Buffer.alloc(32, 23).toString('base64');
const root = path.join(os.tmpdir(), `gantry-master-key-${process.pid}-${Date.now()}`);
let server: RunningServer | null = null;

afterEach(async () => {
  await server?.stop();
  server = null;
});

afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function environment(database: TestDatabase, masterKey: string | null): Record<string, string> {
  return {
    DATABASE_URL: database.url,
    GANTRY_PORT: '0',
    GANTRY_GRPC_PORT: '0',
    GANTRY_METRICS_PORT: 'off',
    GANTRY_HOST: '127.0.0.1',
    GANTRY_DATA_DIR: path.join(root, database.name),
    GANTRY_BOOTSTRAP_ACCOUNT_ID: ADMIN.id,
    GANTRY_BOOTSTRAP_API_KEY: ADMIN.key,
    ...(masterKey === null ? {} : { GANTRY_MASTER_KEY: masterKey }),
  };
}

const start = (database: TestDatabase, masterKey: string | null) =>
  startServer(loadConfig(environment(database, masterKey)), pino({ level: 'silent' }));

/** The rotation command as a process: its exit status and output. */
async function rotate(
  database: TestDatabase,
  masterKey: string | null,
  extra: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/rotate-master-key.ts'], {
    env: { PATH: process.env.PATH, ...environment(database, masterKey), GANTRY_LOG_LEVEL: 'silent', ...extra },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A rotation that hung (waiting on a lock) fails the test instead of hanging it.
  const kill = setTimeout(() => child.kill('SIGKILL'), 45_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(kill);
  return { code, stdout, stderr };
}

async function call(method: string, url: string, body?: unknown): Promise<Response> {
  return fetch(`${server!.url}${url}`, {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function post(url: string, body: unknown): Promise<Record<string, string>> {
  const response = await call('POST', url, body);
  expect(response.status, `${url}: ${await response.clone().text()}`).toBe(200);
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

/** One of each sealed kind, through the API: a Sensitive value, a feed's password, a cloud account, a release's snapshot. */
async function sealedThings(): Promise<{ workspaceId: string; feedId: string; cloudAccountId: string }> {
  const workspaces = (await (await call('GET', '/api/workspace')).json()) as {
    workspaces: Array<{ workspaceId: string }>;
  };
  const { workspaceId } = workspaces.workspaces[0]!;
  const { projectId } = await post('/api/project', { workspaceId, name: 'Rotated' });
  const { variableId } = await post('/api/project/variable', { projectId, name: 'Token', variableType: 'Sensitive' });
  await post('/api/project/variable/value', { variableId, theValue: 'the-sensitive-value' });
  const { feedId } = await post('/api/feed', {
    workspaceId,
    name: 'Private NuGet',
    feedType: 'NuGet',
    url: 'https://nuget.example.com/v3/index.json',
    username: 'deployer',
    password: 'the-feed-password',
  });
  const { cloudAccountId } = await post('/api/cloud-account', {
    workspaceId,
    name: 'Azure prod',
    type: 'Azure',
    config: { subscriptionId: 'sub-1', clientSecret: 'the-client-secret' },
  });
  await post('/api/release', { projectId, version: '1.0.0' });
  return { workspaceId, feedId: feedId!, cloudAccountId: cloudAccountId! };
}

interface Sealed {
  check: string | null;
  values: string[];
}

/** Every sealed value the database holds, and the recorded check. */
async function sealedIn(database: TestDatabase): Promise<Sealed> {
  const db = createDb(database.url);
  try {
    const check = (await db('master_key_check').first('key_check'))?.key_check ?? null;
    const values = [
      ...(await db('variable_values').whereNotNull('value_encrypted').pluck('value_encrypted')),
      ...(await db('feeds').whereNotNull('config_encrypted').pluck('config_encrypted')),
      ...(await db('cloud_accounts').pluck('config_encrypted')),
    ];
    for (const snapshot of await db('releases').pluck('snapshot'))
      for (const variable of snapshot.variables)
        for (const value of variable.values) if (value.valueEncrypted) values.push(value.valueEncrypted);
    return { check, values };
  } finally {
    await db.destroy();
  }
}

const openWith = (key: string, sealed: string[]) =>
  sealed.map((s) => createSecretBox(Buffer.from(key, 'base64')).decrypt(s));
const checkOf = (key: string) => masterKeyCheck(Buffer.from(key, 'base64'));

describe('npm run rotate-master-key', { timeout: 120_000 }, () => {
  it('reseals every sealed value with the new key and records it; refuses beside a running control plane or with a wrong key', async () => {
    const database = await createTestDatabase();
    server = await start(database, KEY_A);
    const { feedId, cloudAccountId } = await sealedThings();
    const before = await sealedIn(database);
    expect(before.check).toBe(checkOf(KEY_A));
    // The variable value, the feed, the cloud account and the snapshot's copy of the value.
    expect(before.values).toHaveLength(4);
    const plain = openWith(KEY_A, before.values);
    expect(plain[0]).toBe('the-sensitive-value');
    expect(plain[3]).toBe('the-sensitive-value');

    // Beside a running control plane: refused (75), naming it, and nothing changed.
    const beside = await rotate(database, KEY_A, { GANTRY_NEW_MASTER_KEY: KEY_B });
    expect(beside.code, beside.stderr).toBe(75);
    expect(beside.stderr).toContain('control planes are running on this database');
    expect(beside.stderr).toMatch(new RegExp(`gantry control plane ${os.hostname()}`));
    expect(await sealedIn(database)).toEqual(before);
    await server.stop();
    server = null;

    // With a key that is not the installation's: refused (78), nothing changed, no key printed.
    const wrong = await rotate(database, KEY_C, { GANTRY_NEW_MASTER_KEY: KEY_B });
    expect(wrong.code, wrong.stderr).toBe(EXIT_CONFIGURATION);
    expect(wrong.stderr).toContain(
      "GANTRY_MASTER_KEY is not the key this installation's Sensitive values are sealed with",
    );
    expect(await sealedIn(database)).toEqual(before);
    // GANTRY_MASTER_KEY set and no new key given: refused before anything is opened.
    const noNewKey = await rotate(database, KEY_A);
    expect(noNewKey.code).toBe(EXIT_CONFIGURATION);
    expect(noNewKey.stderr).toContain('GANTRY_NEW_MASTER_KEY');

    const rotated = await rotate(database, KEY_A, { GANTRY_NEW_MASTER_KEY: KEY_B });
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain(
      'Resealed with the new master key: 1 Sensitive variable value, 1 feed credential, 1 cloud account, 1 release snapshot.',
    );
    for (const output of [rotated.stdout, rotated.stderr, wrong.stderr, beside.stderr])
      for (const key of [KEY_A, KEY_B, KEY_C]) expect(output).not.toContain(key);
    const after = await sealedIn(database);
    expect(after.check).toBe(checkOf(KEY_B));
    expect(openWith(KEY_B, after.values)).toEqual(plain);
    expect(() => openWith(KEY_A, after.values)).toThrow();

    // The old key is refused at start now; the new one starts and opens every credential.
    await expect(start(database, KEY_A)).rejects.toThrow(/GANTRY_MASTER_KEY is not the key this installation/);
    server = await start(database, KEY_B);
    expect((await call('GET', `/api/feed/details?feedId=${feedId}`)).status).toBe(200);
    expect(await (await call('GET', `/api/feed/details?feedId=${feedId}`)).json()).toMatchObject({ hasPassword: true });
    expect((await call('GET', `/api/cloud-account/details?cloudAccountId=${cloudAccountId}`)).status).toBe(200);
    // The audit log of the organization says when, by whom, and what was resealed.
    const audit = (await (await call('GET', '/api/audit?resourceType=master-key')).json()) as {
      events: Array<Record<string, unknown>>;
    };
    expect(audit.events).toEqual([
      expect.objectContaining({
        action: 'rotate-master-key',
        workspaceId: null,
        accountId: null,
        accountName: `npm run rotate-master-key (${os.userInfo().username}@${os.hostname()})`,
        after: { variableValues: 1, feeds: 1, cloudAccounts: 1, releaseSnapshots: 1 },
        status: 200,
      }),
    ]);
    const ready = await fetch(`${server.url}/readyz`);
    expect(await ready.json()).toMatchObject({ ready: true, checks: { masterKey: 'ok' } });

    // Rotated under a running replica anyway (its presence lost with its connection): it says so.
    const db = createDb(database.url);
    await db('master_key_check').update({ key_check: checkOf(KEY_C) });
    await db.destroy();
    const unready = await fetch(`${server.url}/readyz`);
    expect(unready.status).toBe(503);
    expect(await unready.json()).toMatchObject({ checks: { masterKey: expect.stringContaining('rotated') } });
  });

  it('makes a control plane that starts during a rotation wait for it, then check its key against the new one', async () => {
    const database = await createTestDatabase();
    server = await start(database, KEY_A);
    await server.stop();
    server = null;
    // A rotation in progress, as its transaction holds the lock; the replica starts meanwhile.
    const db = createDb(database.url);
    try {
      const rotation = await db.transaction();
      await rotation.raw('select pg_advisory_xact_lock(?)', [REPLICA_PRESENCE_LOCK_KEY]);
      const starting = start(database, KEY_A).then(
        (started) => ((server = started), null),
        (error: unknown) => error as Error,
      );
      await waitFor(
        async () =>
          (
            await db('pg_stat_activity')
              .where('application_name', 'like', 'gantry control plane %')
              .where({ wait_event_type: 'Lock', wait_event: 'advisory', datname: database.name })
          ).length === 1,
        { timeoutMs: 30_000, description: 'the start waiting on the presence lock' },
      );
      await rotation('master_key_check').update({ key_check: checkOf(KEY_B) });
      await rotation.commit();
      // It read the check only once the rotation had ended: the old key is refused.
      expect(String(await starting)).toMatch(/GANTRY_MASTER_KEY is not the key this installation/);
    } finally {
      await db.destroy();
    }
  });

  it('with the key in the data folder makes a new one there; a start finishes a rotation interrupted after its commit', async () => {
    const database = await createTestDatabase();
    const dataDir = environment(database, null).GANTRY_DATA_DIR!;
    const keyFile = path.join(dataDir, 'master.key');
    const nextFile = path.join(dataDir, 'master.key.next');
    server = await start(database, null);
    await sealedThings();
    await server.stop();
    server = null;
    const oldKey = (await fs.readFile(keyFile, 'utf8')).trim();
    const plain = openWith(oldKey, (await sealedIn(database)).values);

    const rotated = await rotate(database, null);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain(`${keyFile} holds the new key`);
    const newKey = (await fs.readFile(keyFile, 'utf8')).trim();
    expect(newKey).not.toBe(oldKey);
    expect(Buffer.from(newKey, 'base64')).toHaveLength(32);
    expect((await fs.stat(keyFile)).mode & 0o777).toBe(0o600);
    await expect(fs.stat(nextFile)).rejects.toThrow();
    expect(rotated.stdout).not.toContain(newKey);
    const after = await sealedIn(database);
    expect(after.check).toBe(checkOf(newKey));
    expect(openWith(newKey, after.values)).toEqual(plain);

    // As a rotation killed between its commit and the rename: the new key still in master.key.next.
    await fs.rename(keyFile, nextFile);
    await fs.writeFile(keyFile, oldKey, { mode: 0o600 });
    server = await start(database, null);
    expect((await fs.readFile(keyFile, 'utf8')).trim()).toBe(newKey);
    await expect(fs.stat(nextFile)).rejects.toThrow();
    await server.stop();
    server = null;

    // A key file left by a rotation that did not commit is removed; the installation's key stays.
    await fs.writeFile(nextFile, KEY_C, { mode: 0o600 });
    server = await start(database, null);
    await expect(fs.stat(nextFile)).rejects.toThrow();
    expect((await fs.readFile(keyFile, 'utf8')).trim()).toBe(newKey);
  });
});
