import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type Client, type TestContext } from '../../helpers/app.ts';
import { filesUnder } from '../../helpers/files.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { parsePackageFileName } from '../../../services/packages/index.ts';
import { archiveFor, makeZip, multipartBody, type FormPart } from '../packages/archives.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

function post(client: Client, parts: FormPart[]) {
  const { payload, headers } = multipartBody(parts);
  return client.raw({ method: 'POST', path: '/api/packagestore/package', payload, headers });
}

function upload(client: Client, workspaceId: string, fileName: string, data: Buffer) {
  return post(client, [
    { name: 'workspaceId', value: workspaceId },
    { name: 'PackageFile', file: { fileName, data } },
  ]);
}

async function rowsFor(context: TestContext, workspaceId: string, packageId: string) {
  return context
    .db('packages')
    .where({ workspace_id: workspaceId })
    .whereRaw('lower(package_id) = lower(?)', [packageId]);
}

async function expectNothingStored(
  context: TestContext,
  workspaceId: string,
  packageId: string,
  blobsBefore: string[],
) {
  expect(await rowsFor(context, workspaceId, packageId)).toEqual([]);
  expect((await filesUnder(path.join(context.dataDir, 'packages'))).sort()).toEqual(blobsBefore.sort());
  expect(await filesUnder(path.join(context.dataDir, 'packages', '.staging'))).toEqual([]);
}

describe('POST /api/packagestore/package', () => {
  it.each([
    'Acme.Web.1.2.3.zip',
    'Acme.Nu.1.0.0-rc.1.nupkg',
    'Acme.Tar.2.0.0.tar',
    'Acme.Gz.2.0.0-rc.1+sha.5114f85.tar.gz',
  ])('stores %s with its checksum and answers an empty 200', async (fileName) => {
    const data = await archiveFor(fileName);
    const response = await upload(t.admin, t.mainWorkspaceId, fileName, data);
    expect(response.status, response.text).toBe(200);
    expect(response.text).toBe('');

    const name = parsePackageFileName(fileName);
    const [row] = await rowsFor(t, t.mainWorkspaceId, name.packageId);
    expect(row).toMatchObject({
      package_id: name.packageId,
      version: name.version,
      type: name.type,
      size_bytes: String(data.length),
      sha256: sha256(data),
    });
    const blob = await fs.readFile(path.join(t.dataDir, 'packages', ...String(row.blob_key).split('/')));
    expect(blob.equals(data)).toBe(true);
  });

  it('accepts WorkspaceId spelled in PascalCase and sent after the file', async () => {
    const data = await archiveFor('Order.App.1.0.0.zip');
    const response = await post(t.admin, [
      { name: 'PackageFile', file: { fileName: 'Order.App.1.0.0.zip', data } },
      { name: 'WorkspaceId', value: t.mainWorkspaceId },
    ]);
    expect(response.status, response.text).toBe(200);
    expect(await rowsFor(t, t.mainWorkspaceId, 'Order.App')).toHaveLength(1);
    expect(await filesUnder(path.join(t.dataDir, 'packages', '.staging'))).toEqual([]);
  });

  it('refuses a duplicate ID and version, in any case and with other build metadata, with 400', async () => {
    const data = await archiveFor('Dup.App.1.0.0+build.1.zip');
    expect((await upload(t.admin, t.mainWorkspaceId, 'Dup.App.1.0.0+build.1.zip', data)).status).toBe(200);
    const blobsBefore = await filesUnder(path.join(t.dataDir, 'packages'));
    for (const name of [
      'Dup.App.1.0.0+build.1.zip',
      'dup.app.1.0.0+build.1.zip',
      'Dup.App.1.0.0+build.2.tar',
      'Dup.App.1.0.0.zip',
    ]) {
      const again = await upload(t.admin, t.mainWorkspaceId, name, await archiveFor(name));
      expect(again.status, name).toBe(400);
      expect(again.body).toMatchObject({ errorcode: 3001, error: expect.stringContaining('already exists') });
    }
    expect(await rowsFor(t, t.mainWorkspaceId, 'Dup.App')).toHaveLength(1);
    expect(await filesUnder(path.join(t.dataDir, 'packages'))).toEqual(blobsBefore);
  });

  it('lets another workspace hold the same ID and version', async () => {
    const other = await t.workspace();
    const data = await archiveFor('Dup.App.1.0.0.zip');
    expect((await upload(t.admin, other, 'Dup.App.1.0.0.zip', data)).status).toBe(200);
  });

  it.each(['Acme.1.2.zip', '1.2.3.zip', 'Acme.v1.2.3.zip', 'Acme.1.2.3.rar', '..Acme.1.2.3.zip', 'Acme.Web.zip'])(
    'refuses the file name %s with 400 and stores nothing',
    async (fileName) => {
      const blobsBefore = await filesUnder(path.join(t.dataDir, 'packages'));
      const response = await upload(t.admin, t.mainWorkspaceId, fileName, makeZip([{ name: 'a.txt', data: 'a' }]));
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'PackageFile' }] });
      expect(await filesUnder(path.join(t.dataDir, 'packages'))).toEqual(blobsBefore);
    },
  );

  it.each([
    ['Broken.Zip.1.0.0.zip', Buffer.from('PK\u0003\u0004 this is not really a zip')],
    ['Broken.Nu.1.0.0.nupkg', Buffer.from('not a nupkg at all')],
    ['Broken.Tar.1.0.0.tar', Buffer.from('x'.repeat(700))],
    ['Broken.Gz.1.0.0.tar.gz', Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3])],
    ['Empty.Zip.1.0.0.zip', Buffer.alloc(0)],
  ])('refuses the corrupt archive %s with 400 and leaves no row, blob or temp file', async (fileName, data) => {
    const blobsBefore = await filesUnder(path.join(t.dataDir, 'packages'));
    const response = await upload(t.admin, t.mainWorkspaceId, fileName, data);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'PackageFile' }] });
    await expectNothingStored(t, t.mainWorkspaceId, fileName.split('.1.0.0')[0] as string, blobsBefore);
  });

  it('refuses a zip whose data was cut off before the central directory', async () => {
    const whole = makeZip([{ name: 'a.txt', data: 'x'.repeat(5000) }]);
    const response = await upload(t.admin, t.mainWorkspaceId, 'Cut.Zip.1.0.0.zip', whole.subarray(0, 3000));
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('not a readable zip archive');
  });

  it('requires PushPackages: 401/2003 for an account without it, and stores nothing', async () => {
    const viewer = await t.account([{ role: 'View' }, { role: 'Deploy' }]);
    const response = await upload(viewer, t.mainWorkspaceId, 'Denied.App.1.0.0.zip', await archiveFor('x.zip'));
    expect(response.status).toBe(401);
    expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('PushPackages') });
    expect(await rowsFor(t, t.mainWorkspaceId, 'Denied.App')).toEqual([]);
    const pusher = await t.account([{ role: 'PushPackages' }]);
    expect((await upload(pusher, t.mainWorkspaceId, 'Allowed.App.1.0.0.zip', await archiveFor('x.zip'))).status).toBe(
      200,
    );
  });

  it('refuses an unknown workspace and another workspace of a scoped account with 400', async () => {
    const data = await archiveFor('x.zip');
    const unknown = await upload(t.admin, 'no-such-workspace', 'Lost.App.1.0.0.zip', data);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'workspaceId' }] });
    const other = await t.workspace();
    const pusher = await t.account([{ role: 'PushPackages' }], other);
    const foreign = await upload(pusher, t.mainWorkspaceId, 'Lost.App.1.0.0.zip', data);
    expect(foreign.status).toBe(400);
    expect(await rowsFor(t, t.mainWorkspaceId, 'Lost.App')).toEqual([]);
  });

  it('refuses a form without PackageFile or without workspaceId with 400', async () => {
    const noFile = await post(t.admin, [{ name: 'workspaceId', value: t.mainWorkspaceId }]);
    expect(noFile.status).toBe(400);
    expect(noFile.body.validationErrors[0].property).toBe('PackageFile');
    const noWorkspace = await post(t.admin, [
      { name: 'PackageFile', file: { fileName: 'NoWs.App.1.0.0.zip', data: await archiveFor('x.zip') } },
    ]);
    expect(noWorkspace.status).toBe(400);
    expect(noWorkspace.body.validationErrors[0].property).toBe('workspaceId');
    expect(await filesUnder(path.join(t.dataDir, 'packages', '.staging'))).toEqual([]);
  });

  it('answers 415 to a JSON body', async () => {
    const response = await t.admin.post('/api/packagestore/package', { workspaceId: t.mainWorkspaceId });
    expect(response.status).toBe(415);
    expect(response.body.errorcode).toBe(3001);
  });

  it('answers 401/2002 without credentials', async () => {
    const response = await upload(t.anonymous, t.mainWorkspaceId, 'Anon.App.1.0.0.zip', await archiveFor('x.zip'));
    expect(response.status).toBe(401);
    expect(response.body.errorcode).toBe(2002);
  });
});

describe('package size limit', () => {
  const LIMIT = 4096;
  let small: TestContext;
  let address: string;
  beforeAll(async () => {
    small = await testApp({ packages: { maxBytes: LIMIT } });
    // Listening for the whole block (closed with the app), for the tests that need a real socket.
    address = await small.app.listen({ port: 0, host: '127.0.0.1' });
  });

  it('refuses a package one byte over the limit with 400 and leaves nothing behind', async () => {
    const data = makeZip([{ name: 'big.bin', data: Buffer.alloc(LIMIT, 7) }]);
    expect(data.length).toBeGreaterThan(LIMIT);
    const response = await upload(small.admin, small.mainWorkspaceId, 'Big.App.1.0.0.zip', data);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({
      errorcode: 3001,
      error: expect.stringContaining('larger than the 4096 bytes limit'),
    });
    await expectNothingStored(small, small.mainWorkspaceId, 'Big.App', []);
  });

  it('refuses it too when the file comes before the workspace field', async () => {
    const data = makeZip([{ name: 'big.bin', data: Buffer.alloc(LIMIT * 3, 7) }]);
    const response = await post(small.admin, [
      { name: 'PackageFile', file: { fileName: 'Big.App.1.0.0.zip', data } },
      { name: 'workspaceId', value: small.mainWorkspaceId },
    ]);
    expect(response.status).toBe(400);
    await expectNothingStored(small, small.mainWorkspaceId, 'Big.App', []);
  });

  it('answers 400 over a real socket while the client is still sending, and leaves nothing', async () => {
    const { payload, headers } = multipartBody([
      { name: 'workspaceId', value: small.mainWorkspaceId },
      { name: 'PackageFile', file: { fileName: 'Socket.App.1.0.0.zip', data: Buffer.alloc(LIMIT * 256, 1) } },
    ]);
    const response = await fetch(`${address}/api/packagestore/package`, {
      method: 'POST',
      headers: {
        ...headers,
        authorization: `Basic ${Buffer.from('test-admin:test-admin-key-0123456789').toString('base64')}`,
      },
      body: new Uint8Array(payload),
    }).catch((error: unknown) => error);
    // The server may answer before it has read the body; a client can then see a reset instead.
    if (response instanceof Response) {
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: string }).error).toContain('larger than');
    }
    await expectNothingStored(small, small.mainWorkspaceId, 'Socket.App', []);
  });

  it('leaves nothing behind when the client drops the connection in the middle of the file', async () => {
    const { port } = new URL(address);
    const { payload, headers } = multipartBody([
      { name: 'workspaceId', value: small.mainWorkspaceId },
      {
        name: 'PackageFile',
        file: {
          fileName: 'Aborted.App.1.0.0.zip',
          data: makeZip([{ name: 'a.bin', data: Buffer.alloc(LIMIT / 2, 3) }]),
        },
      },
    ]);
    const socket = net.connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    const head = [
      'POST /api/packagestore/package HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      `Authorization: Basic ${Buffer.from('test-admin:test-admin-key-0123456789').toString('base64')}`,
      `Content-Type: ${headers['content-type']}`,
      `Content-Length: ${payload.length}`,
      '',
      '',
    ].join('\r\n');
    socket.write(head);
    // Half of the body, then the client vanishes.
    socket.write(payload.subarray(0, Math.floor(payload.length / 2)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.destroy();
    await waitFor(async () => (await filesUnder(path.join(small.dataDir, 'packages', '.staging'))).length === 0, {
      timeoutMs: 5_000,
    });
    await expectNothingStored(small, small.mainWorkspaceId, 'Aborted.App', []);
  });

  it('accepts a package of exactly the limit', async () => {
    const overhead = makeZip([{ name: 'big.bin', data: '' }]).length;
    const data = makeZip([{ name: 'big.bin', data: Buffer.alloc(LIMIT - overhead, 7) }]);
    expect(data.length).toBe(LIMIT);
    const response = await upload(small.admin, small.mainWorkspaceId, 'Edge.App.1.0.0.zip', data);
    expect(response.status, response.text).toBe(200);
    expect((await rowsFor(small, small.mainWorkspaceId, 'Edge.App'))[0]).toMatchObject({ size_bytes: String(LIMIT) });
  });
});

describe('GET /api/packagestore/packages', () => {
  let workspaceId: string;
  beforeAll(async () => {
    workspaceId = await t.workspace();
    for (const version of ['1.9.0', '1.10.0', '1.0.0-rc.1', '1.0.0', '1.10.0-beta.2+sha.1', '1.2.0']) {
      const name = `Sorted.App.${version}.zip`;
      const response = await upload(t.admin, workspaceId, name, await archiveFor(name));
      if (response.status !== 200) throw new Error(response.text);
    }
    await upload(t.admin, workspaceId, 'Another.Lib.3.0.0.tar', await archiveFor('x.tar'));
  });

  it('lists one package highest SemVer first, not by upload time nor string order', async () => {
    const response = await t.admin.get('/api/packagestore/packages', { workspaceId, packageId: 'sorted.app' });
    expect(response.status).toBe(200);
    expect(response.body.packages.map((p: { version: string }) => p.version)).toEqual([
      '1.10.0',
      '1.10.0-beta.2+sha.1',
      '1.9.0',
      '1.2.0',
      '1.0.0',
      '1.0.0-rc.1',
    ]);
    expect(response.body.totalCount).toBe(6);
    expect(response.body.packages[0]).toEqual({
      packageId: 'Sorted.App',
      version: '1.10.0',
      type: 'zip',
      sizeBytes: expect.any(Number),
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      uploadedUtc: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
    });
  });

  it('lists every package of the workspace grouped by ID, and pages', async () => {
    const all = await t.admin.get('/api/packagestore/packages', { workspaceId });
    expect(
      all.body.packages.map((p: { packageId: string; version: string }) => `${p.packageId}@${p.version}`).slice(0, 2),
    ).toEqual(['Another.Lib@3.0.0', 'Sorted.App@1.10.0']);
    expect(all.body.totalCount).toBe(7);
    const page = await t.admin.get('/api/packagestore/packages', { workspaceId, skip: 1, take: 2 });
    expect(page.body.packages.map((p: { version: string }) => p.version)).toEqual(['1.10.0', '1.10.0-beta.2+sha.1']);
  });

  it('lets a View account list and refuses an account without View with 401/2003', async () => {
    const viewer = await t.account([{ role: 'View' }], workspaceId);
    expect((await viewer.get('/api/packagestore/packages', { workspaceId })).status).toBe(200);
    const pusher = await t.account([{ role: 'PushPackages' }], workspaceId);
    const refused = await pusher.get('/api/packagestore/packages', { workspaceId });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
  });

  it("refuses another workspace's ID and a missing workspaceId with 400", async () => {
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/packagestore/packages', { workspaceId })).status).toBe(400);
    expect((await t.admin.get('/api/packagestore/packages', {})).status).toBe(400);
  });
});

describe('GET /api/packagestore/package/download', () => {
  it('returns exactly the uploaded bytes', async () => {
    const data = await archiveFor('Down.App.2.1.0.tar.gz', [{ name: 'bin/app', data: Buffer.alloc(100_000, 3) }]);
    expect((await upload(t.admin, t.mainWorkspaceId, 'Down.App.2.1.0.tar.gz', data)).status).toBe(200);
    const response = await t.app.inject({
      method: 'GET',
      url: '/api/packagestore/package/download',
      query: { workspaceId: t.mainWorkspaceId, packageId: 'down.app', version: '2.1.0' },
      headers: { authorization: `Basic ${Buffer.from('test-admin:test-admin-key-0123456789').toString('base64')}` },
    });
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(data)).toBe(true);
    expect(response.headers['content-type']).toBe('application/octet-stream');
    expect(response.headers['content-disposition']).toBe('attachment; filename="Down.App.2.1.0.tar.gz"');
    expect(response.headers['x-package-sha256']).toBe(sha256(data));
  });

  it('lets a Deploy account download and refuses a PushPackages-only account with 401/2003', async () => {
    const deployer = await t.account([{ role: 'Deploy' }]);
    const ok = await deployer.get('/api/packagestore/package/download', {
      workspaceId: t.mainWorkspaceId,
      packageId: 'Down.App',
      version: '2.1.0',
    });
    expect(ok.status).toBe(200);
    const pusher = await t.account([{ role: 'PushPackages' }]);
    const refused = await pusher.get('/api/packagestore/package/download', {
      workspaceId: t.mainWorkspaceId,
      packageId: 'Down.App',
      version: '2.1.0',
    });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
  });

  it('refuses an unknown version, an unknown package and an unknown workspace with 400', async () => {
    for (const query of [
      { workspaceId: t.mainWorkspaceId, packageId: 'Down.App', version: '2.1.1' },
      { workspaceId: t.mainWorkspaceId, packageId: 'Down.App', version: '2.1.0+other' },
      { workspaceId: t.mainWorkspaceId, packageId: 'Nope', version: '2.1.0' },
      { workspaceId: 'nope', packageId: 'Down.App', version: '2.1.0' },
    ]) {
      const response = await t.admin.get('/api/packagestore/package/download', query);
      expect(response.status, JSON.stringify(query)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
  });
});

describe('POST /api/packagestore/package/negotiate', () => {
  it('answers legacy for a workspace without a package store region', async () => {
    const response = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: t.mainWorkspaceId,
      FileName: 'Neg.App.1.0.0.zip',
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ mode: 'legacy' });
    expect(await t.db('pending_uploads').where({ workspace_id: t.mainWorkspaceId })).toEqual([]);
  });

  it('answers direct with an upload URL for a workspace in a region, in any key case', async () => {
    const created = await t.admin.post('/api/workspace', { name: 'Regional', packageStoreRegion: 'westeurope' });
    const response = await t.admin.post('/api/packagestore/package/negotiate', {
      workspaceId: created.body.workspaceId,
      fileName: 'Neg.App.1.0.0.zip',
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      mode: 'direct',
      uploadUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8080\/api\/packagestore\/blob\/[\w-]+\?exp=\d+&sig=/),
    });
  });

  it('refuses an invalid file name, an unknown workspace and a missing field with 400', async () => {
    const badName = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: t.mainWorkspaceId,
      FileName: 'Neg.App.1.2.zip',
    });
    expect(badName.status).toBe(400);
    expect(badName.body.validationErrors[0].property).toBe('FileName');
    const badWorkspace = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: 'nope',
      FileName: 'Neg.App.1.0.0.zip',
    });
    expect(badWorkspace.status).toBe(400);
    expect(badWorkspace.body.validationErrors[0].property).toBe('WorkspaceId');
    const missing = await t.admin.post('/api/packagestore/package/negotiate', { WorkspaceId: t.mainWorkspaceId });
    expect(missing.status).toBe(400);
    const wrongType = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: t.mainWorkspaceId,
      FileName: 5,
    });
    expect(wrongType.status).toBe(400);
  });

  it('refuses a package that already exists with 400', async () => {
    await upload(t.admin, t.mainWorkspaceId, 'Exists.App.1.0.0.zip', await archiveFor('x.zip'));
    const response = await t.admin.post('/api/packagestore/package/negotiate', {
      WorkspaceId: t.mainWorkspaceId,
      FileName: 'Exists.App.1.0.0.zip',
    });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('already exists');
  });

  it('requires PushPackages: 401/2003', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const response = await viewer.post('/api/packagestore/package/negotiate', {
      WorkspaceId: t.mainWorkspaceId,
      FileName: 'Neg.App.1.0.0.zip',
    });
    expect(response.status).toBe(401);
    expect(response.body.errorcode).toBe(2003);
  });
});
