import { beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../../services/core/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let staging: string;
let production: string;

beforeAll(async () => {
  t = await testApp();
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  const byName = (name: string) =>
    environments.body.environments.find((e: { name: string }) => e.name === name).environmentId as string;
  staging = byName('Staging');
  production = byName('Production');
});

async function machine(name: string, extra: Record<string, unknown> = {}) {
  const created = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name, ...extra });
  if (created.status !== 200) throw new Error(created.text);
  return created.body as { machineId: string; registrationToken: string };
}

async function details(machineId: string) {
  return (await t.admin.get('/api/machine/details', { machineId })).body;
}

describe('POST /api/machine', () => {
  it('creates a Pending machine with environments and tags, and stores only the token hash', async () => {
    const tag = await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'web' });
    const created = await machine('web-01', { environmentIds: [production, staging], tagIds: [tag.body.tagId] });
    expect(created.registrationToken).toMatch(/^[\w-]{40,}$/);

    const list = await t.admin.get('/api/machine', { workspaceId: t.mainWorkspaceId });
    expect(list.status).toBe(200);
    const listed = list.body.machines.find((m: { machineId: string }) => m.machineId === created.machineId);
    expect(listed).toEqual({
      machineId: created.machineId,
      workspaceId: t.mainWorkspaceId,
      name: 'web-01',
      environments: [
        { environmentId: staging, name: 'Staging' },
        { environmentId: production, name: 'Production' },
      ],
      tagIds: [tag.body.tagId],
      enabled: true,
      status: 'Pending',
      lastSeenUtc: null,
      agentVersion: null,
      os: null,
      hostname: null,
      health: 'Pending',
      healthReasons: ['no agent has registered yet'],
      interpreters: null,
      freeDiskBytes: null,
      upgrade: null,
    });
    expect(JSON.stringify(list.body)).not.toContain(created.registrationToken);

    const [row] = await t.db('machines').where({ id: created.machineId });
    expect(row.registration_token_hash).toBe(hashSecret(created.registrationToken));
    expect(JSON.stringify(row)).not.toContain(created.registrationToken);
    const expiresInMs = new Date(row.registration_expires_at).getTime() - Date.now();
    expect(expiresInMs).toBeGreaterThan(23.9 * 3600_000);
    expect(expiresInMs).toBeLessThanOrEqual(24 * 3600_000);
  });

  it('refuses a duplicate name in any case', async () => {
    await machine('dup-01');
    const duplicate = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'DUP-01' });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'name' }] });
  });

  it('refuses unknown, deleted and foreign environments and tags, creating nothing', async () => {
    const other = await t.workspace();
    const foreignEnv = await t.admin.post('/api/environment', { workspaceId: other, name: 'Elsewhere' });
    const foreignTag = await t.admin.post('/api/tag', { workspaceId: other, name: 'elsewhere' });
    const deletedEnv = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Gone' });
    await t.admin.delete('/api/environment', { environmentId: deletedEnv.body.environmentId });

    for (const [extra, property] of [
      [{ environmentIds: ['nope'] }, 'environmentIds'],
      [{ environmentIds: [foreignEnv.body.environmentId] }, 'environmentIds'],
      [{ environmentIds: [deletedEnv.body.environmentId] }, 'environmentIds'],
      [{ tagIds: ['nope'] }, 'tagIds'],
      [{ tagIds: [foreignTag.body.tagId] }, 'tagIds'],
    ] as const) {
      const response = await t.admin.post('/api/machine', {
        workspaceId: t.mainWorkspaceId,
        name: 'refused',
        ...extra,
      });
      expect(response.status, JSON.stringify(extra)).toBe(400);
      expect(response.body.validationErrors[0].property).toBe(property);
    }
    expect(await t.db('machines').where({ name: 'refused' })).toHaveLength(0);
  });

  it('refuses unknown workspaces, wrong types and oversized input with 400', async () => {
    expect((await t.admin.post('/api/machine', { workspaceId: 'nope', name: 'x' })).status).toBe(400);
    expect((await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 5 })).status).toBe(400);
    expect(
      (await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'x', environmentIds: 'Staging' }))
        .status,
    ).toBe(400);
    expect((await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'x'.repeat(201) })).status).toBe(
      400,
    );
    expect((await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
  });
});

describe('GET /api/machine status', () => {
  it('reports Online after a recent heartbeat and Offline after an old one', async () => {
    const online = await machine('status-online');
    const offline = await machine('status-offline');
    const store = t.deps.store.machines;
    await store.completeRegistration(online.machineId, hashSecret('cred-online'), {
      agentVersion: '1.2.3',
      os: 'linux',
      hostname: 'h1',
    });
    await store.recordHeartbeat(online.machineId, new Date());
    await store.completeRegistration(offline.machineId, hashSecret('cred-offline'), {});
    await store.recordHeartbeat(offline.machineId, new Date(Date.now() - 10 * 60_000));

    const onlineView = await details(online.machineId);
    expect(onlineView).toMatchObject({ status: 'Online', agentVersion: '1.2.3', os: 'linux', hostname: 'h1' });
    expect(new Date(onlineView.lastSeenUtc).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect((await details(offline.machineId)).status).toBe('Offline');
  });

  it('pages with skip and take and counts every machine', async () => {
    const all = await t.admin.get('/api/machine', { workspaceId: t.mainWorkspaceId });
    const page = await t.admin.get('/api/machine', { workspaceId: t.mainWorkspaceId, skip: 1, take: 1 });
    expect(page.body.totalCount).toBe(all.body.totalCount);
    expect(page.body.machines).toHaveLength(1);
    expect(page.body.machines[0].machineId).toBe(all.body.machines[1].machineId);
  });
});

describe('PUT /api/machine', () => {
  it('changes only the fields sent', async () => {
    const tag = await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'db' });
    const created = await machine('edit-01', { environmentIds: [staging] });
    const updated = await t.admin.put('/api/machine', {
      machineId: created.machineId,
      enabled: false,
      tagIds: [tag.body.tagId, tag.body.tagId],
    });
    expect(updated.status).toBe(200);
    expect(updated.text).toBe('');
    expect(await details(created.machineId)).toMatchObject({
      name: 'edit-01',
      enabled: false,
      tagIds: [tag.body.tagId],
      environments: [{ environmentId: staging }],
    });
    await t.admin.put('/api/machine', { machineId: created.machineId, name: 'edited-01' });
    expect(await details(created.machineId)).toMatchObject({ name: 'edited-01', enabled: false });
  });

  it('refuses unknown machines, unknown tags and taken names', async () => {
    const created = await machine('edit-02');
    await machine('edit-03');
    expect((await t.admin.put('/api/machine', { machineId: 'nope', name: 'x' })).status).toBe(400);
    expect((await t.admin.put('/api/machine', { machineId: created.machineId, tagIds: ['nope'] })).status).toBe(400);
    expect((await t.admin.put('/api/machine', { machineId: created.machineId, name: 'EDIT-03' })).status).toBe(400);
    expect((await t.admin.put('/api/machine', { machineId: created.machineId, enabled: 'yes' })).status).toBe(400);
    expect((await details(created.machineId)).name).toBe('edit-02');
  });
});

describe('DELETE /api/machine', () => {
  it('deletes the machine and its environment links', async () => {
    const created = await machine('delete-01', { environmentIds: [staging] });
    expect((await t.admin.delete('/api/machine', { machineId: created.machineId })).status).toBe(200);
    expect(await t.db('machines').where({ id: created.machineId })).toHaveLength(0);
    expect(await t.db('machine_environments').where({ machine_id: created.machineId })).toHaveLength(0);
    expect((await t.admin.delete('/api/machine', { machineId: created.machineId })).status).toBe(400);
    expect((await t.admin.get('/api/machine/details', { machineId: created.machineId })).status).toBe(400);
  });
});

describe('POST /api/machine/registration-token', () => {
  it('replaces the pending token with a new one', async () => {
    const created = await machine('token-01');
    const renewed = await t.admin.post('/api/machine/registration-token', { machineId: created.machineId });
    expect(renewed.status).toBe(200);
    expect(renewed.body.registrationToken).not.toBe(created.registrationToken);
    const [row] = await t.db('machines').where({ id: created.machineId });
    expect(row.registration_token_hash).toBe(hashSecret(renewed.body.registrationToken));
    expect((await t.admin.post('/api/machine/registration-token', { machineId: 'nope' })).status).toBe(400);
  });
});

describe('machine environments', () => {
  it('reads, sets, adds and removes environments', async () => {
    const created = await machine('envs-01');
    const machineId = created.machineId;
    const read = async () => (await t.admin.get('/api/machine/environments', { machineId })).body;

    expect(await read()).toEqual({ machineId, environments: [] });
    expect(
      (await t.admin.put('/api/machine/environments', { machineId, environmentIds: [production, staging, staging] }))
        .status,
    ).toBe(200);
    expect((await read()).environments.map((e: { name: string }) => e.name)).toEqual(['Staging', 'Production']);

    expect((await t.admin.delete('/api/machine/environment', { machineId, environmentId: staging })).status).toBe(200);
    expect((await read()).environments).toEqual([{ environmentId: production, name: 'Production' }]);

    expect((await t.admin.post('/api/machine/environment', { machineId, environmentId: staging })).status).toBe(200);
    expect((await t.admin.post('/api/machine/environment', { machineId, environmentId: staging })).status).toBe(200);
    expect(await t.db('machine_environments').where({ machine_id: machineId })).toHaveLength(2);

    expect((await t.admin.put('/api/machine/environments', { machineId, environmentIds: [] })).status).toBe(200);
    expect(await t.db('machine_environments').where({ machine_id: machineId })).toHaveLength(0);
  });

  it('refuses unknown or foreign environments and unassigned removals, changing nothing', async () => {
    const other = await t.workspace();
    const foreign = await t.admin.post('/api/environment', { workspaceId: other, name: 'Foreign' });
    const { machineId } = await machine('envs-02', { environmentIds: [staging] });
    expect(
      (await t.admin.put('/api/machine/environments', { machineId, environmentIds: [production, 'nope'] })).status,
    ).toBe(400);
    expect(
      (await t.admin.put('/api/machine/environments', { machineId, environmentIds: [foreign.body.environmentId] }))
        .status,
    ).toBe(400);
    expect(
      (await t.admin.post('/api/machine/environment', { machineId, environmentId: foreign.body.environmentId })).status,
    ).toBe(400);
    expect((await t.admin.post('/api/machine/environment', { machineId: 'nope', environmentId: staging })).status).toBe(
      400,
    );
    expect((await t.admin.delete('/api/machine/environment', { machineId, environmentId: production })).status).toBe(
      400,
    );
    expect((await t.admin.put('/api/machine/environments', { machineId })).status).toBe(400);
    expect((await t.admin.get('/api/machine/environments', { machineId: 'nope' })).status).toBe(400);
    const rows = await t.db('machine_environments').where({ machine_id: machineId });
    expect(rows.map((r) => r.environment_id)).toEqual([staging]);
  });

  it('hides environments that were deleted', async () => {
    const temp = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Temporary' });
    const { machineId } = await machine('envs-03', { environmentIds: [temp.body.environmentId, staging] });
    await t.admin.delete('/api/environment', { environmentId: temp.body.environmentId });
    expect((await details(machineId)).environments).toEqual([{ environmentId: staging, name: 'Staging' }]);
  });
});

describe('machine permissions', () => {
  it('lets a View account read but not change machines', async () => {
    const { machineId } = await machine('perm-01');
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/machine', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    expect((await viewer.get('/api/machine/environments', { machineId })).status).toBe(200);
    for (const refused of [
      await viewer.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'nope' }),
      await viewer.put('/api/machine', { machineId, name: 'nope' }),
      await viewer.delete('/api/machine', { machineId }),
      await viewer.post('/api/machine/registration-token', { machineId }),
      await viewer.put('/api/machine/environments', { machineId, environmentIds: [] }),
      await viewer.post('/api/machine/environment', { machineId, environmentId: staging }),
    ]) {
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    }
    expect(await details(machineId)).toMatchObject({ name: 'perm-01' });
  });

  it('limits an environment-scoped manager to its environments', async () => {
    const manager = await t.account([{ role: 'ManageWorkspace', environmentIds: [staging] }]);
    const allowed = await manager.post('/api/machine', {
      workspaceId: t.mainWorkspaceId,
      name: 'scoped-01',
      environmentIds: [staging],
    });
    expect(allowed.status).toBe(200);
    const refused = await manager.post('/api/machine', {
      workspaceId: t.mainWorkspaceId,
      name: 'scoped-02',
      environmentIds: [production],
    });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toContain(production);
    const moved = await manager.put('/api/machine/environments', {
      machineId: allowed.body.machineId,
      environmentIds: [production],
    });
    expect(moved.status).toBe(401);
    expect((await details(allowed.body.machineId)).environments).toEqual([{ environmentId: staging, name: 'Staging' }]);
  });

  it('treats another workspace as unknown', async () => {
    const { machineId } = await machine('perm-02');
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    expect((await outsider.get('/api/machine', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
    expect((await outsider.get('/api/machine/environments', { machineId })).status).toBe(400);
    expect((await outsider.delete('/api/machine', { machineId })).status).toBe(400);
    expect(await t.db('machines').where({ id: machineId })).toHaveLength(1);
  });
});

describe("machine health (GET /api/machine, beside the spec's status)", () => {
  it('reads Unhealthy when its agent reports little free disk or is older than supported, Online otherwise', async () => {
    const created = await machine('health-01');
    const report = (columns: Record<string, unknown>) =>
      t
        .db('machines')
        .where({ id: created.machineId })
        .update({ agent_credential_hash: 'x'.repeat(64), last_seen_at: new Date(), ...columns });
    const read = async () =>
      (await t.admin.get('/api/machine', { workspaceId: t.mainWorkspaceId, take: 500 })).body.machines.find(
        (m: { machineId: string }) => m.machineId === created.machineId,
      );

    await report({ agent_version: '0.0.9', home_free_bytes: 200 * 1024 * 1024, interpreters: ['bash', 'sh'] });
    expect(await read()).toMatchObject({
      status: 'Online',
      health: 'Unhealthy',
      healthReasons: [
        "0.2 GiB free in the agent's home, below 1.0 GiB",
        'agent 0.0.9 is older than 0.1.0, the oldest this control plane supports',
      ],
      interpreters: ['bash', 'sh'],
      freeDiskBytes: 200 * 1024 * 1024,
    });

    await report({ agent_version: '0.1.0', home_free_bytes: 50 * 1024 ** 3 });
    expect(await read()).toMatchObject({ health: 'Online', healthReasons: [], freeDiskBytes: 50 * 1024 ** 3 });

    await report({ last_seen_at: new Date(Date.now() - 10 * 60_000) });
    expect(await read()).toMatchObject({
      status: 'Offline',
      health: 'Offline',
      healthReasons: ['its agent has not been heard from recently'],
    });
  });
});
