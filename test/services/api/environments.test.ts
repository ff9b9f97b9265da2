import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

describe('POST /api/environment', () => {
  it('creates an environment that the list then shows, ordered by sortOrder', async () => {
    const created = await t.admin.post('/api/environment', {
      workspaceId: t.mainWorkspaceId,
      name: 'QA',
      description: 'quality',
      sortOrder: 0,
      color: '#00ff00',
    });
    expect(created.status).toBe(200);
    expect(created.body.environmentId).toEqual(expect.any(String));

    const list = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
    expect(list.status).toBe(200);
    expect(list.body.environments.map((e: { name: string }) => e.name)).toEqual(['QA', 'Staging', 'Production']);
    expect(list.body.environments[0]).toEqual({
      environmentId: created.body.environmentId,
      workspaceId: t.mainWorkspaceId,
      name: 'QA',
      description: 'quality',
      sortOrder: 0,
      color: '#00ff00',
      enabled: true,
      requiredApprovals: 0,
    });
    expect(list.body.totalCount).toBe(3);
  });

  it('appends after the last environment when sortOrder is omitted', async () => {
    const created = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Perf' });
    const details = await t.admin.get('/api/environment/details', { environmentId: created.body.environmentId });
    expect(details.body.sortOrder).toBe(3);
  });

  it('binds property names case-insensitively', async () => {
    const created = await t.admin.post('/api/environment', { WORKSPACEID: t.mainWorkspaceId, Name: 'Sandbox' });
    expect(created.status).toBe(200);
    const details = await t.admin.get('/api/environment/details', { environmentid: created.body.environmentId });
    expect(details.body.name).toBe('Sandbox');
  });

  it('refuses a duplicate name, in any case, with 400 and validationErrors', async () => {
    const duplicate = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'staging' });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'name' }] });
  });

  it('refuses an unknown workspace with 400', async () => {
    const response = await t.admin.post('/api/environment', { workspaceId: 'nope', name: 'X' });
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ errorcode: 3001, error: expect.stringContaining('workspaceId') });
  });

  it('refuses a missing name and a wrong type with 400', async () => {
    const missing = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId });
    expect(missing.status).toBe(400);
    expect(missing.body.validationErrors[0].property).toBe('name');
    const wrongType = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 5 });
    expect(wrongType.status).toBe(400);
    const blank = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: '   ' });
    expect(blank.status).toBe(400);
  });
});

describe('PUT /api/environment', () => {
  it('changes only the fields sent', async () => {
    const created = await t.admin.post('/api/environment', {
      workspaceId: t.mainWorkspaceId,
      name: 'Edit me',
      description: 'keep',
    });
    const updated = await t.admin.put('/api/environment', {
      environmentId: created.body.environmentId,
      enabled: false,
      name: 'Edited',
    });
    expect(updated.status).toBe(200);
    expect(updated.text).toBe('');
    const details = await t.admin.get('/api/environment/details', { environmentId: created.body.environmentId });
    expect(details.body).toMatchObject({ name: 'Edited', description: 'keep', enabled: false });
  });

  it('refuses an unknown environment with 400', async () => {
    const response = await t.admin.put('/api/environment', { environmentId: 'missing', name: 'x' });
    expect(response.status).toBe(400);
  });
});

describe('DELETE /api/environment', () => {
  it('soft-deletes: the environment disappears and its name is free again', async () => {
    const created = await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Temp' });
    expect((await t.admin.delete('/api/environment', { environmentId: created.body.environmentId })).status).toBe(200);
    expect((await t.admin.get('/api/environment/details', { environmentId: created.body.environmentId })).status).toBe(
      400,
    );
    const rows = await t.db('environments').where({ id: created.body.environmentId });
    expect(rows[0].deleted_at).not.toBeNull();
    expect((await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Temp' })).status).toBe(200);
    expect((await t.admin.delete('/api/environment', { environmentId: created.body.environmentId })).status).toBe(400);
  });
});

describe('environment permissions', () => {
  it('lets a View account list but not create', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/environment', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    const refused = await viewer.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'Nope' });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
  });

  it('hides another workspace entirely', async () => {
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    const response = await outsider.get('/api/environment', { workspaceId: t.mainWorkspaceId });
    expect(response.status).toBe(400);
  });
});
