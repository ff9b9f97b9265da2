import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let lifecycleId: string;
let counter = 0;

async function project(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/project', { workspaceId, name: `Project ${++counter}` });
  if (created.status !== 200) throw new Error(created.text);
  return created.body.projectId as string;
}

async function channels(projectId: string) {
  const response = await t.admin.get('/api/project/channels', { projectId });
  expect(response.status).toBe(200);
  return response.body.channels as Array<
    Record<string, unknown> & { channelId: string; name: string; isDefault: boolean }
  >;
}

beforeAll(async () => {
  t = await testApp();
  const list = await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId });
  lifecycleId = list.body.lifecycles[0].lifecycleId;
});

describe('POST /api/project/channel', () => {
  it('creates a channel that the list returns with every field', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', {
      projectId,
      name: 'Beta',
      description: 'early',
      lifecycleId,
      isDefault: true,
      versionRange: '>=1.0.0 <2.0.0',
      preReleaseTag: '^beta',
      packageRules: [{ packageId: 'Web', versionRange: '^1.2', preReleaseTag: '^$' }, { packageId: 'Worker' }],
    });
    expect(created.status).toBe(200);
    const list = await t.admin.get('/api/project/channels', { projectId });
    expect(list.body).toEqual({
      projectId,
      totalCount: 1,
      channels: [
        {
          channelId: created.body.channelId,
          projectId,
          name: 'Beta',
          description: 'early',
          lifecycleId,
          isDefault: true,
          versionRange: '>=1.0.0 <2.0.0',
          preReleaseTag: '^beta',
          packageRules: [
            { packageId: 'Web', versionRange: '^1.2', preReleaseTag: '^$' },
            { packageId: 'Worker', versionRange: null, preReleaseTag: null },
          ],
        },
      ],
    });
    const [row] = await t.db('channels').where({ id: created.body.channelId });
    expect(row).toMatchObject({
      project_id: projectId,
      lifecycle_id: lifecycleId,
      is_default: true,
      version_range: '>=1.0.0 <2.0.0',
    });
  });

  it('creates a plain channel with nulls and no rules, storing empty rules as null', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', {
      projectId,
      name: 'Plain',
      versionRange: '',
      preReleaseTag: '',
    });
    expect(created.status).toBe(200);
    expect((await channels(projectId))[0]).toMatchObject({
      description: null,
      lifecycleId: null,
      isDefault: false,
      versionRange: null,
      preReleaseTag: null,
      packageRules: [],
    });
  });

  it('moves the default flag when another channel becomes default', async () => {
    const projectId = await project();
    const first = await t.admin.post('/api/project/channel', { projectId, name: 'First', isDefault: true });
    const second = await t.admin.post('/api/project/channel', { projectId, name: 'Second', isDefault: true });
    expect(second.status).toBe(200);
    const rows = await t.db('channels').where({ project_id: projectId }).orderBy('name');
    expect(rows.map((r) => [r.name, r.is_default])).toEqual([
      ['First', false],
      ['Second', true],
    ]);
    expect(
      (await t.admin.put('/api/project/channel', { channelId: first.body.channelId, isDefault: true })).status,
    ).toBe(200);
    const list = await channels(projectId);
    expect(list.map((c) => [c.name, c.isDefault])).toEqual([
      ['First', true],
      ['Second', false],
    ]);
  });

  it('refuses an invalid range, an invalid or oversized regex and duplicate package rules with validationErrors', async () => {
    const projectId = await project();
    const range = await t.admin.post('/api/project/channel', { projectId, name: 'Bad', versionRange: 'not a range' });
    expect(range.status).toBe(400);
    expect(range.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'versionRange' }] });
    const tag = await t.admin.post('/api/project/channel', { projectId, name: 'Bad', preReleaseTag: '(beta' });
    expect(tag.body.validationErrors).toEqual([
      { property: 'preReleaseTag', messages: ['is not a valid regular expression'] },
    ]);
    expect(
      (await t.admin.post('/api/project/channel', { projectId, name: 'Bad', preReleaseTag: 'a'.repeat(201) })).status,
    ).toBe(400);
    const rules = await t.admin.post('/api/project/channel', {
      projectId,
      name: 'Bad',
      packageRules: [{ packageId: 'Web' }, { packageId: 'web', versionRange: '>>1' }],
    });
    expect(rules.status).toBe(400);
    expect(rules.body.validationErrors.map((e: { property: string }) => e.property)).toEqual([
      'packageRules[1].packageId',
      'packageRules[1].versionRange',
    ]);
    expect(
      (await t.admin.post('/api/project/channel', { projectId, name: 'Bad', packageRules: [{ packageId: '' }] }))
        .status,
    ).toBe(400);
    expect(await t.db('channels').where({ project_id: projectId })).toHaveLength(0);
  });

  it('refuses unknown, deleted and foreign projects and lifecycles', async () => {
    const other = await t.workspace();
    const foreignProject = await project(other);
    const foreignLifecycle = (await t.admin.post('/api/lifecycle', { workspaceId: other, name: 'Theirs' })).body
      .lifecycleId;
    const deleted = await project();
    await t.admin.delete('/api/project', { projectId: deleted });
    // A workspace-scoped account: the organization-wide admin sees every workspace.
    const editor = await t.account([{ role: 'EditProject' }, { role: 'View' }]);
    for (const projectId of ['nope', foreignProject, deleted]) {
      const response = await editor.post('/api/project/channel', { projectId, name: 'X' });
      expect(response.status).toBe(400);
      expect(response.body.error).toContain('projectId');
    }
    const projectId = await project();
    for (const id of ['nope', foreignLifecycle]) {
      // Even the admin may not bind a lifecycle of another workspace.
      const response = await t.admin.post('/api/project/channel', { projectId, name: 'X', lifecycleId: id });
      expect(response.status).toBe(400);
      expect(response.body.validationErrors[0].property).toBe('lifecycleId');
    }
    expect(await t.db('channels').whereIn('project_id', [projectId, foreignProject, deleted])).toHaveLength(0);
  });

  it('refuses a duplicate name in any case, but allows it in another project', async () => {
    const projectId = await project();
    await t.admin.post('/api/project/channel', { projectId, name: 'Stable' });
    const duplicate = await t.admin.post('/api/project/channel', { projectId, name: 'STABLE' });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors[0].property).toBe('name');
    expect((await t.admin.post('/api/project/channel', { projectId: await project(), name: 'Stable' })).status).toBe(
      200,
    );
  });

  it('refuses wrong types', async () => {
    const projectId = await project();
    for (const body of [
      { projectId, name: 5 },
      { projectId, name: 'X', isDefault: 'yes' },
      { projectId, name: 'X', packageRules: {} },
      { projectId, name: 'X', versionRange: 3 },
    ]) {
      expect((await t.admin.post('/api/project/channel', body)).status).toBe(400);
    }
    expect(await t.db('channels').where({ project_id: projectId })).toHaveLength(0);
  });
});

describe('PUT /api/project/channel', () => {
  it('changes only the fields sent', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', {
      projectId,
      name: 'Keep',
      description: 'd',
      versionRange: '^1.0.0',
      packageRules: [{ packageId: 'Web' }],
    });
    const before = (await channels(projectId))[0];
    expect(
      (
        await t.admin.put('/api/project/channel', {
          channelId: created.body.channelId,
          preReleaseTag: '^rc',
          lifecycleId,
        })
      ).status,
    ).toBe(200);
    expect((await channels(projectId))[0]).toEqual({ ...before, preReleaseTag: '^rc', lifecycleId });
    expect(
      (
        await t.admin.put('/api/project/channel', {
          channelId: created.body.channelId,
          lifecycleId: null,
          packageRules: null,
          versionRange: null,
        })
      ).status,
    ).toBe(200);
    expect((await channels(projectId))[0]).toMatchObject({
      name: 'Keep',
      description: 'd',
      lifecycleId: null,
      packageRules: [],
      versionRange: null,
      preReleaseTag: '^rc',
    });
  });

  it('clears the default flag when isDefault is false', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Only', isDefault: true });
    await t.admin.put('/api/project/channel', { channelId: created.body.channelId, isDefault: false });
    expect((await t.db('channels').where({ id: created.body.channelId }).first()).is_default).toBe(false);
  });

  it('refuses an unknown channel, a bad rule and a duplicate name, leaving the channel unchanged', async () => {
    expect((await t.admin.put('/api/project/channel', { channelId: 'nope', name: 'X' })).status).toBe(400);
    const projectId = await project();
    await t.admin.post('/api/project/channel', { projectId, name: 'Taken' });
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Mine' });
    const before = await channels(projectId);
    const bad = await t.admin.put('/api/project/channel', {
      channelId: created.body.channelId,
      name: 'Renamed',
      versionRange: '~>banana',
    });
    expect(bad.status).toBe(400);
    const duplicate = await t.admin.put('/api/project/channel', { channelId: created.body.channelId, name: 'taken' });
    expect(duplicate.body.validationErrors[0].property).toBe('name');
    expect(await channels(projectId)).toEqual(before);
  });
});

describe('DELETE /api/project/channel', () => {
  it('deletes a channel', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Gone', isDefault: true });
    expect((await t.admin.delete('/api/project/channel', { channelId: created.body.channelId })).status).toBe(200);
    expect(await t.db('channels').where({ id: created.body.channelId })).toHaveLength(0);
    expect((await t.admin.delete('/api/project/channel', { channelId: created.body.channelId })).status).toBe(400);
  });

  it('refuses while a variable value is scoped to the channel', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Scoped' });
    const channelId = created.body.channelId;
    await t.db('variables').insert({
      id: `var-${counter}`,
      workspace_id: t.mainWorkspaceId,
      project_id: projectId,
      name: 'ConnectionString',
    });
    await t.db('variable_values').insert({
      id: `val-${counter}`,
      variable_id: `var-${counter}`,
      value_plain: 'x',
      channel_filter: JSON.stringify([channelId]),
    });
    const refused = await t.admin.delete('/api/project/channel', { channelId });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("variable 'ConnectionString'");
    expect(await t.db('channels').where({ id: channelId })).toHaveLength(1);
    await t
      .db('variable_values')
      .where({ id: `val-${counter}` })
      .update({ deleted_at: new Date() });
    expect((await t.admin.delete('/api/project/channel', { channelId })).status).toBe(200);
  });
});

describe('GET /api/project/channels', () => {
  it('lists the default channel first, then by name', async () => {
    const projectId = await project();
    for (const [name, isDefault] of [
      ['Zeta', false],
      ['Main', true],
      ['Alpha', false],
    ] as const)
      await t.admin.post('/api/project/channel', { projectId, name, isDefault });
    expect((await channels(projectId)).map((c) => c.name)).toEqual(['Main', 'Alpha', 'Zeta']);
  });

  it('answers 400 for a missing, unknown or deleted project', async () => {
    expect((await t.admin.get('/api/project/channels')).status).toBe(400);
    expect((await t.admin.get('/api/project/channels', { projectId: 'nope' })).status).toBe(400);
    const projectId = await project();
    await t.admin.post('/api/project/channel', { projectId, name: 'Hidden' });
    await t.admin.delete('/api/project', { projectId });
    expect((await t.admin.get('/api/project/channels', { projectId })).status).toBe(400);
  });
});

describe('channel permissions', () => {
  it('lets View read but not write, and limits EditProject to its projects', async () => {
    const projectId = await project();
    const otherProject = await project();
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Guarded' });
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/project/channels', { projectId })).status).toBe(200);
    for (const response of [
      await viewer.post('/api/project/channel', { projectId, name: 'No' }),
      await viewer.put('/api/project/channel', { channelId: created.body.channelId, name: 'No' }),
      await viewer.delete('/api/project/channel', { channelId: created.body.channelId }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
    }
    const editor = await t.account([{ role: 'EditProject', projectIds: [otherProject] }, { role: 'View' }]);
    expect((await editor.post('/api/project/channel', { projectId, name: 'No' })).status).toBe(401);
    expect((await editor.put('/api/project/channel', { channelId: created.body.channelId, name: 'No' })).status).toBe(
      401,
    );
    expect((await editor.post('/api/project/channel', { projectId: otherProject, name: 'Yes' })).status).toBe(200);
    expect((await channels(projectId)).map((c) => c.name)).toEqual(['Guarded']);
  });

  it('hides another workspace’s channels', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/channel', { projectId, name: 'Ours' });
    const outsider = await t.account([{ role: 'EditProject' }, { role: 'View' }], await t.workspace());
    expect((await outsider.get('/api/project/channels', { projectId })).status).toBe(400);
    expect(
      (await outsider.put('/api/project/channel', { channelId: created.body.channelId, name: 'Theirs' })).status,
    ).toBe(400);
    expect((await outsider.delete('/api/project/channel', { channelId: created.body.channelId })).status).toBe(400);
    expect(await t.db('channels').where({ id: created.body.channelId, name: 'Ours' })).toHaveLength(1);
  });
});
