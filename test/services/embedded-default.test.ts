/**
 * The embedded default: with no DATABASE_URL, Gantry starts its own PostgreSQL 15 in the data
 * folder, migrates, bootstraps, serves — and keeps everything across a restart.
 */
import { execFile } from 'node:child_process';
import { watch } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError, loadConfig } from '../../services/config.ts';
import { startServer, type RunningServer } from '../../services/server.ts';

const dataDir = path.join(os.tmpdir(), `gantry-embedded-${process.pid}-${Date.now()}`);
let server: RunningServer | null = null;

// The server a test started stops after it (its PostgreSQL, listeners and timers with it).
afterEach(async () => {
  await server?.stop();
  server = null;
});

afterAll(async () => {
  await fs.rm(dataDir, { recursive: true, force: true });
});

function config() {
  return loadConfig({
    GANTRY_DATA_DIR: dataDir,
    GANTRY_PORT: '0',
    // Not the default 8081: another test's server may hold it (a CI run: EADDRINUSE).
    GANTRY_GRPC_PORT: '0',
    GANTRY_HOST: '127.0.0.1',
    GANTRY_LOG_LEVEL: 'silent',
    GANTRY_METRICS_PORT: 'off',
  });
}

/** Starts a server on this data folder, expects its own PostgreSQL 15 up, and stops it. */
async function startsAndStops(dataDir: string): Promise<void> {
  server = await startServer({ ...config(), dataDir });
  const [{ version }] = (await server.db.raw('select version()')).rows;
  expect(version).toMatch(/^PostgreSQL 15\./);
  await server.stop();
  server = null;
}

async function request(
  method: string,
  url: string,
  credentials: { serviceAccountId: string; apiKey: string },
  body?: unknown,
) {
  const response = await fetch(`${server!.url}${url}`, {
    method,
    headers: {
      authorization: `Basic ${Buffer.from(`${credentials.serviceAccountId}:${credentials.apiKey}`).toString('base64')}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return {
    status: response.status,
    body: response.headers.get('content-type')?.includes('json') ? await response.json() : null,
  };
}

describe('embedded default', () => {
  it('starts PostgreSQL 15 itself, generates Admin credentials, serves, and keeps data across a restart', async () => {
    server = await startServer(config());
    const [{ version }] = (await server.db.raw('select version()')).rows;
    expect(version).toMatch(/^PostgreSQL 15\./);

    const file = path.join(dataDir, 'bootstrap-credentials.json');
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
    const credentials = JSON.parse(await fs.readFile(file, 'utf8'));

    const workspaces = await request('GET', '/api/workspace', credentials);
    expect(workspaces.status).toBe(200);
    const main = workspaces.body.workspaces.find((w: { name: string }) => w.name === 'Main');
    const environments = await request('GET', `/api/environment?workspaceId=${main.workspaceId}`, credentials);
    expect(environments.body.environments.map((e: { name: string }) => e.name)).toEqual(['Staging', 'Production']);
    const created = await request('POST', '/api/environment', credentials, {
      workspaceId: main.workspaceId,
      name: 'Survives',
    });
    expect(created.status).toBe(200);

    await server.stop();
    server = await startServer(config());

    const after = await request('GET', `/api/environment?workspaceId=${main.workspaceId}`, credentials);
    expect(after.status).toBe(200);
    expect(after.body.environments.map((e: { name: string }) => e.name)).toEqual(['Staging', 'Production', 'Survives']);
    // The second start found an installation: it neither re-seeded nor issued new credentials.
    expect((await request('GET', '/api/workspace', credentials)).body.workspaces).toHaveLength(1);
    expect(JSON.parse(await fs.readFile(file, 'utf8'))).toEqual(credentials);
  }, 120_000);

  it.runIf(process.getuid?.() === 0)(
    'refuses, naming the fix, a data folder the postgres user cannot reach',
    async () => {
      const closed = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-closed-'));
      await fs.chmod(closed, 0o700);
      try {
        const config = loadConfig({
          GANTRY_DATA_DIR: path.join(closed, 'data'),
          GANTRY_PORT: '0',
          GANTRY_HOST: '127.0.0.1',
          GANTRY_LOG_LEVEL: 'silent',
          GANTRY_METRICS_PORT: 'off',
        });
        await expect(startServer(config)).rejects.toThrow(`${closed} is closed to other users`);
        await expect(fs.stat(path.join(closed, 'data'))).rejects.toThrow();
      } finally {
        await fs.rm(closed, { recursive: true, force: true });
      }
    },
  );

  it.runIf(process.getuid?.() === 0)(
    'refuses, naming the fix, a data folder made beforehand that the postgres user cannot enter',
    async () => {
      const made = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-made-')); // 0700, as `mktemp -d` makes it
      try {
        await expect(startServer({ ...config(), dataDir: made })).rejects.toThrow(`${made} is closed to other users`);
        expect(await fs.readdir(made)).toEqual([]);
      } finally {
        await fs.rm(made, { recursive: true, force: true });
      }
    },
  );

  it('creates a data folder whose parents do not exist yet, and starts in it', async () => {
    const root = path.join(os.tmpdir(), `gantry-nested-${process.pid}-${Date.now()}`);
    try {
      await startsAndStops(path.join(root, 'lib', 'gantry'));
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  }, 120_000);

  it('restores from a copy of the stopped data folder, owners lost (cp -r); refuses it without its master.key', async () => {
    const root = path.join(os.tmpdir(), `gantry-restore-${process.pid}-${Date.now()}`);
    const [original, copy] = [path.join(root, 'original'), path.join(root, 'copy')];
    try {
      server = await startServer({ ...config(), dataDir: original });
      const credentials = JSON.parse(await fs.readFile(path.join(original, 'bootstrap-credentials.json'), 'utf8'));
      const main = (await request('GET', '/api/workspace', credentials)).body.workspaces[0];
      const created = await request('POST', '/api/environment', credentials, {
        workspaceId: main.workspaceId,
        name: 'Backed up',
      });
      expect(created.status).toBe(200);
      await server.stop();
      server = null;

      await promisify(execFile)('cp', ['-r', original, copy]);
      await fs.chmod(copy, 0o755);
      server = await startServer({ ...config(), dataDir: copy });
      const environments = await request('GET', `/api/environment?workspaceId=${main.workspaceId}`, credentials);
      expect(environments.body.environments.map((e: { name: string }) => e.name)).toContain('Backed up');
      // As root the copy was root's; PostgreSQL runs as (and wants the cluster owned by) postgres.
      if (process.getuid?.() === 0)
        expect((await fs.stat(path.join(copy, 'pg'))).uid).toBe((await fs.stat(path.join(original, 'pg'))).uid);
      await server.stop();
      server = null;

      // Restored without its key: the start would make a new master.key; it refuses instead.
      await fs.rm(path.join(copy, 'master.key'));
      const refused = await startServer({ ...config(), dataDir: copy }).then(
        () => null,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ConfigurationError);
      expect((refused as Error).message).toContain(
        `${path.join(copy, 'master.key')} (GANTRY_MASTER_KEY unset) is not the key this installation's Sensitive values are sealed with`,
      );
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  }, 120_000);

  it("never writes the new cluster's superuser password into the shared temporary folder", async () => {
    const root = path.join(os.tmpdir(), `gantry-pwfile-${process.pid}-${Date.now()}`);
    const seen: string[] = [];
    // initdb reads it from a file; in os.tmpdir() every local user could read it meanwhile.
    const watcher = watch(os.tmpdir(), (_event, name) => {
      if (name?.startsWith('pg-password-')) seen.push(name);
    });
    try {
      await startsAndStops(root);
      expect(seen).toEqual([]);
      expect(await fs.readdir(root)).not.toContain('initdb-tmp');
    } finally {
      watcher.close();
      await fs.rm(root, { recursive: true, force: true });
    }
  }, 120_000);

  it.runIf(process.getuid?.() === 0)(
    'starts under a strict umask (027), opening to the postgres user only the folders it made',
    async () => {
      const root = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-umask-'));
      await fs.chmod(root, 0o711); // existed before: keeps its mode
      const previous = process.umask(0o027);
      try {
        await startsAndStops(path.join(root, 'lib', 'gantry'));
        expect((await fs.stat(path.join(root, 'lib'))).mode & 0o777).toBe(0o755);
        expect((await fs.stat(path.join(root, 'lib', 'gantry'))).mode & 0o777).toBe(0o755);
        expect((await fs.stat(root)).mode & 0o777).toBe(0o711);
      } finally {
        process.umask(previous);
        await fs.rm(root, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
