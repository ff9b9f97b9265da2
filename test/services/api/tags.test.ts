import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

describe('/api/tag', () => {
  it('creates, lists, renames and deletes a tag', async () => {
    const created = await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'web', color: 'blue' });
    expect(created.status).toBe(200);
    const tagId = created.body.tagId;
    expect((await t.admin.put('/api/tag', { tagId, name: 'frontend' })).status).toBe(200);
    const list = await t.admin.get('/api/tag', { workspaceId: t.mainWorkspaceId });
    expect(list.body).toEqual({
      tags: [{ tagId, workspaceId: t.mainWorkspaceId, name: 'frontend', color: 'blue' }],
      totalCount: 1,
    });
    expect((await t.admin.delete('/api/tag', { tagId })).status).toBe(200);
    expect((await t.admin.get('/api/tag', { workspaceId: t.mainWorkspaceId })).body.totalCount).toBe(0);
    expect((await t.admin.delete('/api/tag', { tagId })).status).toBe(400);
  });

  it('refuses duplicate names and unknown workspaces with 400', async () => {
    await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'db' });
    expect((await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'DB' })).status).toBe(400);
    expect((await t.admin.post('/api/tag', { workspaceId: 'unknown', name: 'x' })).status).toBe(400);
  });

  it('refuses to delete a tag a step filter still uses, and keeps it', async () => {
    const tag = await t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'used' });
    const project = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Tagged' });
    await t
      .db('step_templates')
      .insert({ id: 'tpl-tags', workspace_id: t.mainWorkspaceId, name: 'tpl-tags', script_language: 'bash' });
    await t.db('project_steps').insert({
      id: 'step-tags',
      project_id: project.body.projectId,
      name: 'Deploy',
      step_template_id: 'tpl-tags',
      sort_order: 1,
      machine_tag_filter: JSON.stringify([{ tagIds: [tag.body.tagId] }]),
    });
    const refused = await t.admin.delete('/api/tag', { tagId: tag.body.tagId });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("step 'Deploy'");
    expect(await t.db('tags').where({ id: tag.body.tagId })).toHaveLength(1);
  });

  it('needs ManageWorkspace to change tags', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const refused = await viewer.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: 'nope' });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
  });
});
