import net from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../services/api/app.ts';
import { createSecretBox, freePort, systemClock } from '../../../services/core/index.ts';
import { createDb, createStore } from '../../../services/store/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';
import { withAdminClient } from '../../helpers/postgres.ts';
import { waitFor } from '../../helpers/wait-for.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

describe('authentication', () => {
  it('answers 401/2002 with requestid null when credentials are missing', async () => {
    const response = await t.anonymous.get('/api/me');
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ error: expect.any(String), errorcode: 2002, requestid: null });
  });

  it('answers 401/2002 for a wrong key, an unknown account and a malformed header', async () => {
    expect((await t.as({ id: ADMIN.id, key: 'wrong' }).get('/api/me')).body.errorcode).toBe(2002);
    expect((await t.as({ id: 'nobody', key: ADMIN.key }).get('/api/me')).body.errorcode).toBe(2002);
    const malformed = await t.anonymous.raw({
      method: 'GET',
      path: '/api/me',
      headers: { authorization: 'Bearer abc' },
    });
    expect(malformed.status).toBe(401);
  });

  it('returns the calling account from /api/me', async () => {
    const me = await t.admin.get('/api/me');
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      serviceAccountId: ADMIN.id,
      organizationName: 'Default',
      workspaceId: null,
      roles: [{ role: 'Admin' }],
    });
  });

  it('stops accepting a key once it is revoked', async () => {
    const account = await t.account([{ role: 'View' }]);
    expect((await account.get('/api/me')).status).toBe(200);
    const keys = await t.admin.get('/api/service-account/api-key', { serviceAccountId: account.credentials.id });
    expect(keys.body.apiKeys).toHaveLength(1);
    await t.admin.delete('/api/service-account/api-key', { apiKeyId: keys.body.apiKeys[0].apiKeyId });
    expect((await account.get('/api/me')).status).toBe(401);
  });

  it('stores API keys only as hashes', async () => {
    const account = await t.account([{ role: 'View' }]);
    const rows = await t.db('api_keys').where({ service_account_id: account.credentials.id });
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(account.credentials.key);
  });
});

describe('wire conventions', () => {
  it('answers 415 for a JSON endpoint called with another content type', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
      const response = await t.admin.raw({
        method: 'POST',
        path: '/api/environment',
        payload: 'name=x',
        headers: { 'content-type': type },
      });
      expect(response.status, type).toBe(415);
      expect(response.body.errorcode).toBe(3001);
    }
  });

  it('answers 400 for malformed JSON and for an empty body', async () => {
    const malformed = await t.admin.raw({
      method: 'POST',
      path: '/api/environment',
      payload: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errorcode).toBe(3001);
    const empty = await t.admin.raw({
      method: 'POST',
      path: '/api/environment',
      payload: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);
  });

  it('answers 404/3001 for an unknown route', async () => {
    const response = await t.admin.get('/api/does-not-exist');
    expect(response.status).toBe(404);
    expect(response.body).toMatchObject({ errorcode: 3001, requestid: expect.any(String) });
  });

  it('carries X-Request-Id on every response, echoing a sane one from the client', async () => {
    const response = await t.admin.raw({ method: 'GET', path: '/api/me', headers: { 'x-request-id': 'ci-run-42' } });
    expect(response.headers['x-request-id']).toBe('ci-run-42');
    const refused = await t.anonymous.get('/api/me');
    expect(refused.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('answers JSON with charset utf-8', async () => {
    const response = await t.admin.get('/api/me');
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  });

  it('matches query parameter names case-insensitively and accepts booleans in any case', async () => {
    const response = await t.admin.get('/api/environment', { WorkspaceId: t.mainWorkspaceId, TAKE: 1 });
    expect(response.status).toBe(200);
    expect(response.body.environments).toHaveLength(1);
    expect(response.body.totalCount).toBe(2);
  });

  it('refuses take above 500', async () => {
    const response = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId, take: 501 });
    expect(response.status).toBe(400);
  });

  it('serves an OpenAPI 3.1 document describing the routes', async () => {
    const response = await t.anonymous.get('/api/openapi.json');
    expect(response.status).toBe(200);
    expect(response.body.openapi).toBe('3.1.0');
    expect(Object.keys(response.body.paths)).toEqual(
      expect.arrayContaining(['/api/environment', '/api/project', '/api/me']),
    );
    expect(response.body.paths['/api/environment'].post.requestBody).toBeDefined();
  });
});

describe('unexpected failures', () => {
  it('answer 500/1001 with a generic message and no stack trace when the database is gone', async () => {
    const broken = await testApp();
    await broken.db.destroy();
    const response = await broken.admin.get('/api/environment', { workspaceId: broken.mainWorkspaceId });
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ error: 'Internal server error', errorcode: 1001, requestid: expect.any(String) });
    expect(response.text).not.toMatch(/at .*\.(ts|js):\d+/);
  });
});

describe('database unavailable', () => {
  it('answers 503 with Retry-After and the spec body while PostgreSQL refuses connections', async () => {
    const db = createDb(`postgres://127.0.0.1:${await freePort()}/nowhere`);
    const deps = { store: createStore(db), clock: systemClock, secrets: createSecretBox(Buffer.alloc(32, 1)) };
    const app = await buildApp({ ...deps, packages: t.packages }, { logger: false });
    try {
      const started = Date.now();
      const response = await app.inject({
        method: 'GET',
        url: '/api/me',
        headers: { authorization: `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}` },
      });
      expect(response.statusCode).toBe(503);
      expect(response.headers['retry-after']).toBe('5');
      expect(response.json()).toEqual({
        error: 'The database is unavailable; retry shortly',
        errorcode: 1001,
        requestid: expect.any(String),
      });
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await app.close();
      await db.destroy();
    }
  });

  it('keeps serving when PostgreSQL ends every pooled connection (a restart): they are replaced', async () => {
    const own = await testApp();
    expect((await own.admin.get('/api/me')).status).toBe(200);
    const database = own.db.client.config.connection.connectionString.split('/').at(-1) as string;
    await withAdminClient(async (client) => {
      const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [
        database,
      ]);
      const pids = rows.map((r) => r.pid);
      expect(pids.length).toBeGreaterThan(0);
      await client.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
      // pg_terminate_backend only signals: the backends (and so their connections) end shortly
      // after. A restart is over once they are gone; requests sent before that may meet one still
      // ending (a CI run: 503, 503, 200, 200, 200).
      await waitFor(
        async () =>
          (await client.query('select 1 from pg_stat_activity where pid = any($1::int[])', [pids])).rowCount === 0,
        { timeoutMs: 10_000, intervalMs: 20, description: 'the terminated backends to end' },
      );
    });
    const after = await Promise.all([1, 2, 3, 4, 5].map(() => own.admin.get('/api/me')));
    expect(after.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
  });
});

describe('errors raised before routing', () => {
  let port: number;
  // The app listens for the whole block (closed with it at the end of the file), not per test.
  beforeAll(async () => {
    port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
  });

  /** Sends raw bytes to the listening app and returns what came back. */
  async function rawExchange(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
      let received = '';
      socket.on('data', (chunk) => (received += chunk.toString()));
      socket.on('end', () => resolve(received));
      socket.on('error', reject);
    });
  }

  function bodyOf(response: string): unknown {
    return JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));
  }

  it.each([
    ['a malformed request line', 'GARBAGE\r\n\r\n'],
    ['a header too large', `GET /api/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
    ['an invalid header name', 'GET /api/me HTTP/1.1\r\nHo st: x\r\n\r\n'],
  ])('answers %s with 400 and the spec body', async (_what, request) => {
    const response = await rawExchange(request);
    expect(response).toMatch(/^HTTP\/1\.1 400 /);
    expect(response).toMatch(/content-type: application\/json; charset=utf-8/i);
    expect(bodyOf(response)).toEqual({
      error: expect.stringMatching(/^Malformed HTTP request/),
      errorcode: 3001,
      requestid: null,
    });
  });

  it('answers a path that is not valid percent-encoded UTF-8 with 400 and the spec body', async () => {
    const response = await t.admin.raw({ method: 'GET', path: '/api/project/%ED%A0%80' });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({
      error: expect.stringMatching(/^Malformed request/),
      errorcode: 3001,
      requestid: expect.any(String),
    });
  });
});
