/**
 * Direct upload end to end (api-spec §4.7, contract §6) on both blob backends: the filesystem
 * (Gantry's own signed PUT URL) and Azure Blob Storage (real SAS URLs against a real Azurite).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../../services/core/index.ts';
import { createAzureBlobStore } from '../../../services/packages/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { archiveFor } from './archives.ts';
import { freePort } from '../../../services/core/index.ts';

const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const GANTRY_URL = 'http://127.0.0.1:8080/';
const HOUR_MS = 3600_000;

let azurite: ChildProcess | null = null;
let connectionString = '';
const container = `gantry-test-${randomBytes(4).toString('hex')}`;

beforeAll(async () => {
  const port = await freePort();
  const child = spawn(
    path.resolve('node_modules/.bin/azurite-blob'),
    [
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      String(port),
      '--inMemoryPersistence',
      '--extentMemoryLimit',
      '256',
      '--skipApiVersionCheck',
      '--loose',
      '--disableTelemetry',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  azurite = child;
  await new Promise<void>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`Azurite did not start: ${output}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('successfully listens')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`Azurite exited with ${code}: ${output}`)));
  });
  connectionString = `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=${AZURITE_KEY};BlobEndpoint=http://127.0.0.1:${port}/devstoreaccount1;`;
});

afterAll(() => {
  azurite?.kill();
});

/** The test controls time; null means the real clock (Azurite checks SAS expiry on real time). */
let frozenMs: number | null = null;
const clock: Clock = { now: () => new Date(frozenMs ?? Date.now()) };
afterEach(() => {
  frozenMs = null;
});

interface Backend {
  name: string;
  options(): Parameters<typeof testApp>[0];
  /** Blob names under a prefix (`feed/`, `pending/`) with their sizes. */
  blobs(t: TestContext, prefix: string): Promise<Array<{ name: string; size: number }>>;
}

async function listFiles(dir: string): Promise<Array<{ name: string; size: number }>> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => ({ name: e.name, size: (await fs.stat(path.join(e.parentPath, e.name))).size })),
  );
}

function azureContainer(): ContainerClient {
  return BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container);
}

const backends: Backend[] = [
  {
    name: 'filesystem',
    options: () => ({ clock }),
    blobs: (t, prefix) => listFiles(path.join(t.dataDir, 'packages', prefix)),
  },
  {
    name: 'azure (Azurite)',
    options: () => ({ clock, packages: { blobs: () => createAzureBlobStore({ connectionString, container }) } }),
    async blobs(_t, prefix) {
      const found: Array<{ name: string; size: number }> = [];
      for await (const blob of azureContainer().listBlobsFlat({ prefix }))
        found.push({ name: blob.name, size: blob.properties.contentLength ?? 0 });
      return found;
    },
  },
];

describe.each(backends)('direct upload on $name', (backend) => {
  let t: TestContext;
  let workspaceId: string;
  let counter = 0;
  beforeAll(async () => {
    t = await testApp(backend.options());
    const created = await t.admin.post('/api/workspace', { name: 'Regional', packageStoreRegion: 'westeurope' });
    workspaceId = created.body.workspaceId;
  });

  const nextName = (ext = 'zip') => `Direct.App.1.0.${++counter}.${ext}`;

  async function negotiate(fileName: string): Promise<string> {
    const response = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: workspaceId,
      FileName: fileName,
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.mode).toBe('direct');
    return response.body.uploadUrl as string;
  }

  async function send(
    method: 'PUT' | 'GET',
    url: string,
    body?: Buffer,
    headers: Record<string, string> = { 'x-ms-blob-type': 'BlockBlob' },
  ): Promise<number> {
    if (url.startsWith(GANTRY_URL)) {
      const target = new URL(url);
      return (await t.app.inject({ method, url: target.pathname + target.search, payload: body, headers })).statusCode;
    }
    const response = await fetch(url, { method, headers, ...(body ? { body: new Uint8Array(body) } : {}) });
    await response.arrayBuffer();
    return response.status;
  }

  const put = (url: string, body: Buffer, headers?: Record<string, string>) => send('PUT', url, body, headers);
  const confirm = (fileName: string) =>
    t.admin.post('/api/packagestore/package/confirm', { WorkspaceId: workspaceId, FileName: fileName });
  const listed = async () =>
    (await t.admin.get('/api/packagestore/packages', { workspaceId })).body.packages as Array<{
      version: string;
      sha256: string;
    }>;

  async function download(version: string): Promise<Buffer | null> {
    const response = await t.app.inject({
      method: 'GET',
      url: '/api/packagestore/package/download',
      query: { workspaceId, packageId: 'Direct.App', version },
      headers: { authorization: `Basic ${Buffer.from('test-admin:test-admin-key-0123456789').toString('base64')}` },
    });
    return response.statusCode === 200 ? response.rawPayload : null;
  }

  /** Sizes of the pending blob behind an upload URL (none when it does not exist). */
  async function pendingBlobSizes(url: string): Promise<number[]> {
    const token = new URL(url).pathname.split('/').pop() as string;
    return (await backend.blobs(t, 'pending/')).filter((b) => b.name.endsWith(token)).map((b) => b.size);
  }

  it('publishes a package through negotiate, PUT and confirm, and not before confirm', async () => {
    const fileName = nextName('tar.gz');
    const data = await archiveFor(fileName, [{ name: 'site/index.html', data: randomBytes(50_000) }]);
    const url = await negotiate(fileName);
    expect(await put(url, data)).toBe(201);

    expect((await listed()).map((p) => p.version)).not.toContain('1.0.1');
    expect(await download('1.0.1')).toBeNull();

    const confirmed = await confirm(fileName);
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.text).toBe('');
    expect((await download('1.0.1'))?.equals(data)).toBe(true);
    expect(await t.db('pending_uploads').where({ workspace_id: workspaceId, file_name: fileName })).toEqual([]);
    // The pending blob is gone (filesystem) or an empty placeholder (Azure): never the package.
    expect(await pendingBlobSizes(url)).toEqual(backend.name === 'filesystem' ? [] : [0]);
  });

  it('refuses a second blob with the same URL, before and after confirm', async () => {
    const fileName = nextName();
    const first = await archiveFor(fileName, [{ name: 'a.txt', data: 'first' }]);
    const url = await negotiate(fileName);
    expect(await put(url, first)).toBe(201);
    expect(await put(url, await archiveFor(fileName, [{ name: 'a.txt', data: 'second' }]))).toBe(403);
    expect((await confirm(fileName)).status).toBe(200);
    expect(await put(url, first)).toBe(403);
    const version = fileName.slice('Direct.App.'.length, -'.zip'.length);
    expect((await download(version))?.equals(first)).toBe(true);
  });

  it('refuses an expired URL with 403', async () => {
    const fileName = nextName();
    frozenMs = Date.now() - 5 * HOUR_MS;
    const url = await negotiate(fileName);
    frozenMs = null;
    expect(await put(url, await archiveFor(fileName))).toBe(403);
    const confirmed = await confirm(fileName);
    expect(confirmed.status).toBe(400);
    expect(confirmed.body.error).toContain('Nothing was uploaded');
  });

  it('accepts a URL until just before its 4 hours are up', async () => {
    const fileName = nextName();
    frozenMs = Date.now() - 4 * HOUR_MS + 60_000;
    const url = await negotiate(fileName);
    frozenMs = null;
    expect(await put(url, await archiveFor(fileName))).toBe(201);
    expect((await confirm(fileName)).status).toBe(200);
  });

  it('refuses a tampered signature and the signature used for another blob with 403', async () => {
    const fileName = nextName();
    const data = await archiveFor(fileName);
    const url = new URL(await negotiate(fileName));
    const sig = url.searchParams.get('sig') as string;
    const tampered = new URL(url);
    tampered.searchParams.set('sig', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1));
    expect(await put(tampered.toString(), data)).toBe(403);

    const otherBlob = new URL(url);
    otherBlob.pathname = url.pathname.replace(/[^/]+$/, 'f0f0f0f0-0000-4000-8000-000000000000');
    expect(await put(otherBlob.toString(), data)).toBe(403);

    const longer = new URL(url);
    longer.searchParams.set(
      url.searchParams.has('exp') ? 'exp' : 'se',
      url.searchParams.has('exp') ? String(Number(url.searchParams.get('exp')) + 3600) : '2099-01-01T00:00:00Z',
    );
    expect(await put(longer.toString(), data)).toBe(403);

    expect(await put(url.toString(), data)).toBe(201);
    expect((await confirm(fileName)).status).toBe(200);
  });

  it('refuses a confirm without a PUT with 400, and accepts it once the blob is there', async () => {
    const fileName = nextName();
    const url = await negotiate(fileName);
    const early = await confirm(fileName);
    expect(early.status).toBe(400);
    expect(early.body).toMatchObject({ errorcode: 3001, error: expect.stringContaining('Nothing was uploaded') });
    expect(await put(url, await archiveFor(fileName))).toBe(201);
    expect((await confirm(fileName)).status).toBe(200);
  });

  it('refuses a confirm for a file that was never negotiated with 400', async () => {
    const response = await confirm('Never.Negotiated.1.0.0.zip');
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('No direct upload was negotiated');
  });

  it('refuses a PUT without x-ms-blob-type with 400', async () => {
    const fileName = nextName();
    const url = await negotiate(fileName);
    expect(await put(url, await archiveFor(fileName), {})).toBe(400);
    expect(await put(url, await archiveFor(fileName))).toBe(201);
  });

  it('is write-only: reading the upload URL is refused', async () => {
    const fileName = nextName();
    const data = await archiveFor(fileName);
    const url = await negotiate(fileName);
    expect(await put(url, data)).toBe(201);
    expect([403, 404]).toContain(await send('GET', url, undefined, {}));
  });

  it('refuses a corrupt archive at confirm and leaves no row and no blob', async () => {
    const fileName = nextName('tar');
    const feedBefore = await backend.blobs(t, 'feed/');
    const url = await negotiate(fileName);
    expect(await put(url, Buffer.from('definitely not a tar archive'.repeat(40)))).toBe(201);
    const response = await confirm(fileName);
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('not a readable tar archive');
    expect(
      await t
        .db('packages')
        .where({ workspace_id: workspaceId, version: fileName.slice('Direct.App.'.length, -'.tar'.length) }),
    ).toEqual([]);
    expect(await t.db('pending_uploads').where({ workspace_id: workspaceId, file_name: fileName })).toEqual([]);
    expect(await backend.blobs(t, 'feed/')).toEqual(feedBefore);
    expect(await pendingBlobSizes(url)).toEqual(backend.name === 'filesystem' ? [] : [0]);
    expect(await listFiles(path.join(t.dataDir, 'packages', '.staging'))).toEqual([]);
  });

  it('refuses to negotiate a package that is already published', async () => {
    const fileName = nextName();
    const url = await negotiate(fileName);
    expect(await put(url, await archiveFor(fileName))).toBe(201);
    expect((await confirm(fileName)).status).toBe(200);
    const again = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: workspaceId,
      FileName: fileName,
    });
    expect(again.status).toBe(400);
  });

  it('requires PushPackages to confirm: 401/2003', async () => {
    const viewer = await t.account([{ role: 'View' }], workspaceId);
    const response = await viewer.post('/api/packagestore/package/confirm', {
      WorkspaceId: workspaceId,
      FileName: nextName(),
    });
    expect(response.status).toBe(401);
    expect(response.body.errorcode).toBe(2003);
  });
});
