/**
 * The replica's read caches (services/domain/read-caches.ts, issue #20): API-key principals and
 * finished deployments' answers. What must hold: the caller's workspace and roles are checked on
 * every read, cached or not; a deletion made through this replica applies at once; one made
 * elsewhere (written straight to the store here) applies within READ_CACHE_MAX_AGE_MS.
 */
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../../services/api/index.ts';
import { Capability } from '../../../services/core/index.ts';
import { READ_CACHE_MAX_AGE_MS } from '../../../services/domain/index.ts';
import { ADMIN, testApp, type Client, type TestContext } from '../../helpers/app.ts';
import { environmentId } from '../../helpers/engine-fixtures.ts';

const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };
/** Moves this replica's clock past the caches' max age. */
const pastMaxAge = () => void (clock.offsetMs += READ_CACHE_MAX_AGE_MS + 1);

let t: TestContext;
let staging: string;
let production: string;

/** A project with one step and a release in `workspaceId`, deployable to its environment `environmentName`. */
async function deployable(workspaceId: string, environmentName: string): Promise<string> {
  const a = t.admin;
  const lifecycles = await a.get('/api/lifecycle', { workspaceId });
  let lifecycleId = lifecycles.body.lifecycles[0]?.lifecycleId as string | undefined;
  if (!lifecycleId) {
    const environment = (await a.post('/api/environment', { workspaceId, name: environmentName })).body.environmentId;
    lifecycleId = (
      await a.post('/api/lifecycle', {
        workspaceId,
        name: 'Only',
        phases: [{ name: 'Only', environments: [{ environmentId: environment }] }],
      })
    ).body.lifecycleId as string;
  }
  const projectId = (await a.post('/api/project', { workspaceId, name: `P ${clock.now().getTime()}`, lifecycleId }))
    .body.projectId;
  const template = await a.post('/api/step-template', { workspaceId, name: `T ${projectId}`, script: 'true' });
  await a.post('/api/project/step', { projectId, name: 'Noop', stepTemplateId: template.body.stepTemplateId });
  return (await a.post('/api/release', { projectId, version: '1.0.0' })).body.releaseId as string;
}

async function deploy(releaseId: string, environmentName: string): Promise<string> {
  const response = await t.admin.post('/api/release/deploy', { releaseId, environments: [environmentName] });
  expect(response.status, response.text).toBe(200);
  return response.body.deploymentIds[0] as string;
}

async function finished(releaseId: string, environmentName: string): Promise<string> {
  const id = await deploy(releaseId, environmentName);
  await t.deps.store.deployments.update(id, { status: 'Completed', completedUtc: new Date() }, new Date());
  return id;
}

const read = (client: Client, deploymentId: string) => client.get('/api/deployment', { deploymentId });

beforeAll(async () => {
  t = await testApp({ clock });
  staging = await environmentId(t, 'Staging');
  production = await environmentId(t, 'Production');
});

describe('finished deployments', () => {
  it('are answered from the cache for at most the max age, the caller checked on every read', async () => {
    const releaseId = await deployable(t.mainWorkspaceId, 'Staging');
    const id = await finished(releaseId, 'Staging');
    const first = await read(t.admin, id);
    expect(first.status).toBe(200);
    expect(first.body.status.Status).toBe('Completed');
    // Changed where this replica does not hear of it: the cached answer stands until the max age.
    await t.db('deployments').where({ id }).update({ warning_count: 7 });
    expect((await read(t.admin, id)).text).toBe(first.text);

    // Served from the cache, yet refused to whoever may not read it.
    const otherWorkspace = await t.account([{ role: Capability.View }], await t.workspace());
    const refused = await read(otherWorkspace, id);
    expect([refused.status, refused.body.errorcode]).toEqual([400, 3001]);
    const elsewhere = await t.account([{ role: Capability.Deploy, environmentIds: [production] }]);
    expect((await read(elsewhere, id)).status).toBe(401);
    const pusher = await t.account([{ role: Capability.PushPackages }]);
    expect((await read(pusher, id)).status).toBe(401);
    const reader = await t.account([{ role: Capability.View, environmentIds: [staging] }]);
    expect((await read(reader, id)).text).toBe(first.text);

    pastMaxAge();
    expect((await read(t.admin, id)).body.status.WarningCount).toBe(7);
  });

  it('are never cached while in progress: a new line shows at once', async () => {
    const releaseId = await deployable(t.mainWorkspaceId, 'Staging');
    const id = await deploy(releaseId, 'Staging');
    expect((await read(t.admin, id)).body.logs).toEqual([]);
    await t.deps.store.deploymentLogs.append(id, [{ level: 'Information', data: 'now' }], new Date());
    expect((await read(t.admin, id)).body.logs.map((l: { Data: string }) => l.Data)).toEqual(['now']);
  });

  it('stop answering once their workspace is deleted: at once here, within the max age when deleted elsewhere', async () => {
    const here = await t.workspace();
    const hereDeployment = await finished(await deployable(here, 'Only'), 'Only');
    expect((await read(t.admin, hereDeployment)).status).toBe(200);
    expect((await t.admin.delete('/api/workspace', { workspaceId: here })).status).toBe(200);
    expect((await read(t.admin, hereDeployment)).status).toBe(400);

    const elsewhere = await t.workspace();
    const elsewhereDeployment = await finished(await deployable(elsewhere, 'Only'), 'Only');
    expect((await read(t.admin, elsewhereDeployment)).status).toBe(200);
    await t.db('workspaces').where({ id: elsewhere }).update({ deleted_at: new Date() });
    expect((await read(t.admin, elsewhereDeployment)).status).toBe(200);
    pastMaxAge();
    expect((await read(t.admin, elsewhereDeployment)).status).toBe(400);
  });
});

describe('API-key principals', () => {
  async function accountWithKey(): Promise<{ accountId: string; apiKeyId: string; client: Client }> {
    const account = await t.admin.post('/api/service-account', {
      workspaceId: t.mainWorkspaceId,
      name: `cached ${clock.now().getTime()} ${Math.random()}`,
      roles: [{ role: Capability.View }],
    });
    const accountId = account.body.serviceAccountId as string;
    const key = await t.admin.post('/api/service-account/api-key', { serviceAccountId: accountId });
    return {
      accountId,
      apiKeyId: key.body.apiKeyId as string,
      client: t.as({ id: accountId, key: key.body.apiKey as string }),
    };
  }

  it('are refused at once when their key or account is deleted through this replica', async () => {
    const byKey = await accountWithKey();
    expect((await byKey.client.get('/api/me')).status).toBe(200);
    expect((await t.admin.delete('/api/service-account/api-key', { apiKeyId: byKey.apiKeyId })).status).toBe(200);
    expect((await byKey.client.get('/api/me')).status).toBe(401);

    const byAccount = await accountWithKey();
    expect((await byAccount.client.get('/api/me')).status).toBe(200);
    expect((await t.admin.delete('/api/service-account', { serviceAccountId: byAccount.accountId })).status).toBe(200);
    expect((await byAccount.client.get('/api/me')).status).toBe(401);
  });

  it('are refused within the max age when their key is deleted elsewhere', async () => {
    const { apiKeyId, client } = await accountWithKey();
    expect((await client.get('/api/me')).status).toBe(200);
    await t.db('api_keys').where({ id: apiKeyId }).update({ deleted_at: new Date() });
    expect((await client.get('/api/me')).status).toBe(200);
    pastMaxAge();
    expect((await client.get('/api/me')).status).toBe(401);
  });

  it('never cache a refusal', async () => {
    const { accountId, client } = await accountWithKey();
    expect((await t.as({ id: accountId, key: 'wrong' }).get('/api/me')).status).toBe(401);
    expect((await client.get('/api/me')).status).toBe(200);
    expect((await t.as({ id: accountId, key: 'wrong' }).get('/api/me')).status).toBe(401);
  });
});

describe('request logs', () => {
  it("carry the calling account's ID (bound to the request's own logger)", async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const app = await buildApp({ ...t.deps, packages: t.packages }, { logger });
    try {
      const authorization = `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}`;
      expect((await app.inject({ method: 'GET', url: '/api/me', headers: { authorization } })).statusCode).toBe(200);
      const completed = lines.map((line) => JSON.parse(line)).find((l) => l.msg === 'request completed');
      expect(completed).toMatchObject({ serviceAccountId: ADMIN.id });
    } finally {
      await app.close();
    }
  });
});
