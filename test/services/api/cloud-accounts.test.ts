import { beforeAll, describe, expect, it } from 'vitest';
import { isSecretKey } from '../../../services/domain/cloud-accounts.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

const azureConfig = {
  subscriptionId: 'sub-1',
  tenantId: 'tenant-1',
  clientId: 'client-1',
  clientSecret: 'azure-client-secret-value',
  nested: { password: 'nested-password-value', region: 'westeurope' },
};

async function create(name: string, extra: Record<string, unknown> = {}) {
  const created = await t.admin.post('/api/cloud-account', {
    workspaceId: t.mainWorkspaceId,
    name,
    type: 'Azure',
    config: azureConfig,
    ...extra,
  });
  if (created.status !== 200) throw new Error(created.text);
  return created.body.cloudAccountId as string;
}

async function storedConfig(cloudAccountId: string) {
  const [row] = await t.db('cloud_accounts').where({ id: cloudAccountId });
  return JSON.parse(t.deps.secrets.decrypt(row.config_encrypted));
}

describe('POST /api/cloud-account', () => {
  it('stores the whole config encrypted and lists it with secrets as null', async () => {
    const cloudAccountId = await create('Azure prod');
    const [row] = await t.db('cloud_accounts').where({ id: cloudAccountId });
    expect(row.account_type).toBe('Azure');
    const raw = JSON.stringify(row);
    for (const plain of ['azure-client-secret-value', 'nested-password-value', 'tenant-1'])
      expect(raw).not.toContain(plain);
    expect(await storedConfig(cloudAccountId)).toEqual(azureConfig);

    const list = await t.admin.get('/api/cloud-account', { workspaceId: t.mainWorkspaceId });
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      cloudAccounts: [
        {
          cloudAccountId,
          workspaceId: t.mainWorkspaceId,
          name: 'Azure prod',
          type: 'Azure',
          config: {
            subscriptionId: 'sub-1',
            tenantId: 'tenant-1',
            clientId: 'client-1',
            clientSecret: null,
            nested: { password: null, region: 'westeurope' },
          },
        },
      ],
      totalCount: 1,
    });
    expect(list.text).not.toContain('azure-client-secret-value');
  });

  it('masks AWS and GCP secrets, including whole secret objects', async () => {
    const aws = await create('AWS', {
      type: 'Aws',
      config: { accessKeyId: 'AKIA1', secretAccessKey: 'aws-secret', region: 'eu-west-1' },
    });
    const gcp = await create('GCP', {
      type: 'Gcp',
      config: { projectId: 'p', jsonKey: { private_key: 'gcp-private' }, keys: [{ apiKey: 'k1', id: 'a' }] },
    });
    expect((await t.admin.get('/api/cloud-account/details', { cloudAccountId: aws })).body.config).toEqual({
      accessKeyId: 'AKIA1',
      secretAccessKey: null,
      region: 'eu-west-1',
    });
    const gcpView = await t.admin.get('/api/cloud-account/details', { cloudAccountId: gcp });
    expect(gcpView.body).toMatchObject({
      type: 'Gcp',
      config: { projectId: 'p', jsonKey: null, keys: [{ apiKey: null, id: 'a' }] },
    });
    expect(gcpView.text).not.toContain('gcp-private');
  });

  it('refuses bad input with 400 and stores nothing', async () => {
    const base = { workspaceId: t.mainWorkspaceId, name: 'Bad', type: 'Azure', config: {} };
    for (const [body, property] of [
      [{ ...base, type: 'Oracle' }, 'type'],
      [{ ...base, config: 'secret' }, 'config'],
      [{ ...base, config: ['a'] }, 'config'],
      [{ ...base, config: { blob: 'x'.repeat(70_000) } }, 'config'],
      [{ ...base, workspaceId: 'nope' }, 'workspaceId'],
      [{ workspaceId: t.mainWorkspaceId, name: 'Bad', type: 'Azure' }, 'config'],
    ] as const) {
      const response = await t.admin.post('/api/cloud-account', body);
      expect(response.status, property).toBe(400);
      expect(response.body.validationErrors?.[0]?.property ?? response.body.error).toContain(property);
    }
    expect(await t.db('cloud_accounts').where({ name: 'Bad' })).toHaveLength(0);
  });

  it('refuses a duplicate name in any case', async () => {
    await create('Dup account');
    const duplicate = await t.admin.post('/api/cloud-account', {
      workspaceId: t.mainWorkspaceId,
      name: 'dup ACCOUNT',
      type: 'Aws',
      config: {},
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors[0].property).toBe('name');
  });
});

describe('PUT /api/cloud-account', () => {
  it('keeps secrets sent back as null and replaces everything else', async () => {
    const cloudAccountId = await create('Round trip');
    const shown = (await t.admin.get('/api/cloud-account/details', { cloudAccountId })).body.config;
    const updated = await t.admin.put('/api/cloud-account', {
      cloudAccountId,
      config: { ...shown, clientId: 'client-2', subscriptionId: undefined },
    });
    expect(updated.status).toBe(200);
    expect(await storedConfig(cloudAccountId)).toEqual({
      tenantId: 'tenant-1',
      clientId: 'client-2',
      clientSecret: 'azure-client-secret-value',
      nested: { password: 'nested-password-value', region: 'westeurope' },
    });

    await t.admin.put('/api/cloud-account', { cloudAccountId, config: { clientSecret: 'rotated' } });
    expect(await storedConfig(cloudAccountId)).toEqual({ clientSecret: 'rotated' });
  });

  it('changes only the fields sent', async () => {
    const cloudAccountId = await create('Rename me');
    expect((await t.admin.put('/api/cloud-account', { cloudAccountId, name: 'Renamed', type: 'Gcp' })).status).toBe(
      200,
    );
    const [row] = await t.db('cloud_accounts').where({ id: cloudAccountId });
    expect(row).toMatchObject({ name: 'Renamed', account_type: 'Gcp' });
    expect(await storedConfig(cloudAccountId)).toEqual(azureConfig);
  });

  it('refuses unknown accounts and wrong types', async () => {
    const cloudAccountId = await create('Typed');
    expect((await t.admin.put('/api/cloud-account', { cloudAccountId: 'nope', name: 'x' })).status).toBe(400);
    expect((await t.admin.put('/api/cloud-account', { cloudAccountId, config: 5 })).status).toBe(400);
    expect((await t.admin.put('/api/cloud-account', { cloudAccountId, type: 'Azure2' })).status).toBe(400);
    expect(await storedConfig(cloudAccountId)).toEqual(azureConfig);
  });
});

describe('DELETE /api/cloud-account', () => {
  it('deletes the account', async () => {
    const cloudAccountId = await create('Delete me');
    expect((await t.admin.delete('/api/cloud-account', { cloudAccountId })).status).toBe(200);
    expect(await t.db('cloud_accounts').where({ id: cloudAccountId })).toHaveLength(0);
    expect((await t.admin.delete('/api/cloud-account', { cloudAccountId })).status).toBe(400);
  });
});

describe('cloud account permissions', () => {
  it('lets a View account read but not change accounts', async () => {
    const cloudAccountId = await create('Viewed');
    const viewer = await t.account([{ role: 'View' }]);
    const read = await viewer.get('/api/cloud-account/details', { cloudAccountId });
    expect(read.status).toBe(200);
    expect(read.body.config.clientSecret).toBeNull();
    const refused = await viewer.delete('/api/cloud-account', { cloudAccountId });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    expect(await t.db('cloud_accounts').where({ id: cloudAccountId })).toHaveLength(1);
  });

  it('treats another workspace as unknown', async () => {
    const cloudAccountId = await create('Hidden');
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    expect((await outsider.get('/api/cloud-account', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
    expect((await outsider.get('/api/cloud-account/details', { cloudAccountId })).status).toBe(400);
    expect((await outsider.put('/api/cloud-account', { cloudAccountId, name: 'stolen' })).status).toBe(400);
    expect((await t.db('cloud_accounts').where({ id: cloudAccountId }))[0].name).toBe('Hidden');
  });
});

describe('isSecretKey', () => {
  it('treats secret-looking names as secret, case-insensitively', () => {
    for (const key of [
      'secret',
      'clientSecret',
      'PASSWORD',
      'token',
      'accessToken',
      'key',
      'apiKey',
      'secretAccessKey',
      'privateKey',
      'connectionString',
      'certificatePem',
      'passphrase',
    ]) {
      expect(isSecretKey(key), key).toBe(true);
    }
    for (const key of ['accessKeyId', 'clientId', 'tenantId', 'region', 'subscriptionId', 'projectId'])
      expect(isSecretKey(key), key).toBe(false);
  });
});
