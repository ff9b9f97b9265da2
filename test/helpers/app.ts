/**
 * testApp(): the production Fastify app on a fresh database, bootstrapped with known Admin
 * credentials, driven with inject(). `as(account)` gives a client for any service account.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Knex } from 'knex';
import { buildApp } from '../../services/api/app.ts';
import { createSecretBox, systemClock, type Clock, type Role } from '../../services/core/index.ts';
import { bootstrap, createReadCaches, type DeploymentChanges, type DomainDeps } from '../../services/domain/index.ts';
import { createDb, createStore } from '../../services/store/index.ts';
import {
  createFilesystemBlobStore,
  createPackageService,
  stagingDirOf,
  type BlobStore,
  type AgentDistribution,
  type PackageService,
} from '../../services/packages/index.ts';
import { createTestDatabase } from './database.ts';

export interface Credentials {
  id: string;
  key: string;
}

export interface Response<T = any> {
  status: number;
  body: T;
  headers: Record<string, unknown>;
  text: string;
}

export interface Client {
  get<T = any>(path: string, query?: Record<string, unknown>): Promise<Response<T>>;
  post<T = any>(path: string, body?: unknown): Promise<Response<T>>;
  put<T = any>(path: string, body?: unknown): Promise<Response<T>>;
  delete<T = any>(path: string, body?: unknown): Promise<Response<T>>;
  /** Any request, for tests of raw payloads and headers. */
  raw(options: {
    method: string;
    path: string;
    payload?: string | Buffer;
    headers?: Record<string, string>;
  }): Promise<Response>;
}

export interface TestContext {
  app: FastifyInstance;
  db: Knex;
  deps: DomainDeps;
  /** The package store, on a temporary data dir (or the blob store the test passed). */
  packages: PackageService;
  /** This app's temporary data dir (package blobs and staging live under it). */
  dataDir: string;
  admin: Client;
  anonymous: Client;
  as(credentials: Credentials): Client;
  /** The bootstrap workspace "Main". */
  mainWorkspaceId: string;
  /** Creates a service account with these roles (workspace-scoped unless workspaceId is null) and returns a client for it. */
  account(roles: Role[], workspaceId?: string | null): Promise<Client & { credentials: Credentials }>;
  /** Creates a workspace and returns its ID. */
  workspace(name?: string): Promise<string>;
}

export const ADMIN: Credentials = { id: 'test-admin', key: 'test-admin-key-0123456789' };

function basic(credentials: Credentials): string {
  return `Basic ${Buffer.from(`${credentials.id}:${credentials.key}`).toString('base64')}`;
}

function clientFor(app: FastifyInstance, credentials: Credentials | null): Client {
  const headers = (extra: Record<string, string> = {}) =>
    credentials ? { authorization: basic(credentials), ...extra } : extra;
  const send = async (
    method: string,
    path: string,
    body?: unknown,
    query?: Record<string, unknown>,
  ): Promise<Response> => {
    const response = await app.inject({
      method: method as 'GET',
      url: path,
      query: query
        ? Object.fromEntries(
            Object.entries(query)
              .filter(([, v]) => v !== undefined)
              .map(([k, v]) => [k, String(v)]),
          )
        : undefined,
      headers: headers(body === undefined ? {} : { 'content-type': 'application/json' }),
      payload: body === undefined ? undefined : JSON.stringify(body),
    });
    return toResponse(response);
  };
  return {
    get: (path, query) => send('GET', path, undefined, query),
    post: (path, body) => send('POST', path, body),
    put: (path, body) => send('PUT', path, body),
    delete: (path, body) => send('DELETE', path, body),
    raw: async ({ method, path, payload, headers: extra }) =>
      toResponse(await app.inject({ method: method as 'GET', url: path, payload, headers: headers(extra) })),
  };
}

function toResponse(response: { statusCode: number; body: string; headers: Record<string, unknown> }): Response {
  let body: unknown = undefined;
  if (response.body.length > 0 && `${(response.headers['content-type'] as string | undefined) ?? ''}`.includes('json'))
    body = JSON.parse(response.body);
  return { status: response.statusCode, body, headers: response.headers, text: response.body };
}

let counter = 0;

export interface TestAppOptions {
  clock?: Clock;
  /** Wakes followers of deployment events (SSE); without it they re-read on their timer only. */
  deploymentChanges?: DeploymentChanges;
  /** Package store settings: a smaller size limit, or another blob backend (default: filesystem). */
  packages?: { maxBytes?: number; blobs?: (dataDir: string) => BlobStore | Promise<BlobStore> };
  /** The agent bundle GET /api/agent/install.sh serves (default: none built). */
  agentDistribution?: AgentDistribution;
  /** false: no read caches (every read from the store); default: as the control plane has them. */
  readCaches?: boolean;
}

export async function testApp(options: TestAppOptions = {}): Promise<TestContext> {
  const database = await createTestDatabase();
  const db = createDb(database.url, { poolMax: 5 });
  const deps: DomainDeps = {
    store: createStore(db),
    clock: options.clock ?? systemClock,
    secrets: createSecretBox(Buffer.alloc(32, 7)),
    deploymentChanges: options.deploymentChanges,
  };
  await bootstrap(deps, { accountId: ADMIN.id, apiKey: ADMIN.key });
  // As the control plane runs (services/server.ts): every API test also tests the caches.
  if (options.readCaches !== false) {
    const caches = createReadCaches();
    deps.readCaches = caches;
    deps.forgetCachedReads = async () => caches.clear();
  }
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-test-'));
  const blobs = options.packages?.blobs
    ? await options.packages.blobs(dataDir)
    : createFilesystemBlobStore({
        root: path.join(dataDir, 'packages'),
        publicUrl: 'http://127.0.0.1:8080',
        hmacKey: randomBytes(32),
      });
  const packages = createPackageService({
    deps,
    clock: deps.clock,
    blobs,
    stagingDir: stagingDirOf(dataDir),
    maxBytes: options.packages?.maxBytes,
  });
  const app = await buildApp({ ...deps, packages, agentDistribution: options.agentDistribution }, { logger: false });
  afterAll(async () => {
    await app.close();
    await db.destroy();
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  const admin = clientFor(app, ADMIN);
  const workspaces = await admin.get('/api/workspace');
  const main = workspaces.body.workspaces.find((w: { name: string }) => w.name === 'Main');
  return {
    app,
    db,
    deps,
    packages,
    dataDir,
    admin,
    anonymous: clientFor(app, null),
    as: (credentials) => clientFor(app, credentials),
    mainWorkspaceId: main.workspaceId,
    async account(roles, workspaceId) {
      const created = await admin.post('/api/service-account', {
        workspaceId: workspaceId === undefined ? main.workspaceId : workspaceId,
        name: `account-${++counter}`,
        roles,
      });
      if (created.status !== 200) throw new Error(`account creation failed: ${created.text}`);
      const key = await admin.post('/api/service-account/api-key', { serviceAccountId: created.body.serviceAccountId });
      const credentials = { id: created.body.serviceAccountId as string, key: key.body.apiKey as string };
      return Object.assign(clientFor(app, credentials), { credentials });
    },
    async workspace(name) {
      const created = await admin.post('/api/workspace', { name: name ?? `ws-${++counter}-${Date.now()}` });
      if (created.status !== 200) throw new Error(`workspace creation failed: ${created.text}`);
      return created.body.workspaceId as string;
    },
  };
}
