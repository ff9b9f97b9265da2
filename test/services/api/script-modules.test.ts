import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

async function module(name: string, extra: Record<string, unknown> = {}, workspaceId = t.mainWorkspaceId) {
  const created = await t.admin.post('/api/script-module', {
    workspaceId,
    name,
    script: `echo ${name}`,
    scriptLanguage: 'bash',
    ...extra,
  });
  if (created.status !== 200) throw new Error(created.text);
  return created.body.scriptModuleId as string;
}

async function project(name: string) {
  const created = await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name });
  if (created.status !== 200) throw new Error(created.text);
  return created.body.projectId as string;
}

const importedIds = async (projectId: string) =>
  (await t.db('project_script_modules').where({ project_id: projectId }).orderBy('script_module_id')).map(
    (r) => r.script_module_id as string,
  );

describe('/api/script-module', () => {
  it('creates a module, lists it without its script and reads it with details', async () => {
    const scriptModuleId = await module('Helpers', { description: 'shared', script: 'log() { echo "$1"; }' });
    const list = await t.admin.get('/api/script-module', { workspaceId: t.mainWorkspaceId });
    expect(list.status).toBe(200);
    expect(list.body.scriptModules).toContainEqual({
      scriptModuleId,
      workspaceId: t.mainWorkspaceId,
      name: 'Helpers',
      description: 'shared',
      scriptLanguage: 'bash',
    });
    const details = await t.admin.get('/api/script-module/details', { scriptModuleId });
    expect(details.body).toEqual({
      scriptModuleId,
      workspaceId: t.mainWorkspaceId,
      name: 'Helpers',
      description: 'shared',
      scriptLanguage: 'bash',
      script: 'log() { echo "$1"; }',
    });
    expect(await t.db('script_modules').where({ id: scriptModuleId })).toMatchObject([
      { script: 'log() { echo "$1"; }', script_language: 'bash' },
    ]);
  });

  it('updates only the fields sent', async () => {
    const scriptModuleId = await module('Editable', { description: 'keep' });
    expect(
      (
        await t.admin.put('/api/script-module', {
          scriptModuleId,
          script: 'Write-Host hi',
          scriptLanguage: 'powershell',
        })
      ).status,
    ).toBe(200);
    expect((await t.admin.get('/api/script-module/details', { scriptModuleId })).body).toMatchObject({
      name: 'Editable',
      description: 'keep',
      script: 'Write-Host hi',
      scriptLanguage: 'powershell',
    });
  });

  it('refuses bad input, duplicates and unknown IDs with 400', async () => {
    await module('Taken');
    const base = { workspaceId: t.mainWorkspaceId, name: 'Bad', script: 'x', scriptLanguage: 'bash' };
    for (const [body, property] of [
      [{ ...base, scriptLanguage: 'ruby' }, 'scriptLanguage'],
      [{ ...base, script: 42 }, 'script'],
      [{ workspaceId: t.mainWorkspaceId, name: 'Bad', scriptLanguage: 'bash' }, 'script'],
      [{ ...base, workspaceId: 'nope' }, 'workspaceId'],
      [{ ...base, name: 'TAKEN' }, 'name'],
    ] as const) {
      const response = await t.admin.post('/api/script-module', body);
      expect(response.status, property).toBe(400);
      expect(response.body.validationErrors?.[0]?.property ?? response.body.error).toContain(property);
    }
    expect(await t.db('script_modules').where({ name: 'Bad' })).toHaveLength(0);
    expect((await t.admin.put('/api/script-module', { scriptModuleId: 'nope', name: 'x' })).status).toBe(400);
    expect((await t.admin.get('/api/script-module/details', { scriptModuleId: 'nope' })).status).toBe(400);
  });

  it('refuses to delete a module a live project imports, and deletes it once that project is gone', async () => {
    const scriptModuleId = await module('In use');
    const projectId = await project('Importer');
    await t.admin.post('/api/project/script-module', { projectId, scriptModuleId });

    const refused = await t.admin.delete('/api/script-module', { scriptModuleId });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("project 'Importer'");
    expect(await t.db('script_modules').where({ id: scriptModuleId })).toHaveLength(1);

    await t.admin.delete('/api/project', { projectId });
    expect((await t.admin.delete('/api/script-module', { scriptModuleId })).status).toBe(200);
    expect(await t.db('script_modules').where({ id: scriptModuleId })).toHaveLength(0);
    expect(await t.db('project_script_modules').where({ script_module_id: scriptModuleId })).toHaveLength(0);
    expect((await t.admin.delete('/api/script-module', { scriptModuleId })).status).toBe(400);
  });
});

describe('/api/project/script-module(s)', () => {
  it('imports, lists by name, replaces and removes modules', async () => {
    const zeta = await module('Zeta', { scriptLanguage: 'python' });
    const alpha = await module('Alpha');
    const projectId = await project('Modules');
    const read = async () => (await t.admin.get('/api/project/script-modules', { projectId })).body;

    expect(await read()).toEqual({ projectId, scriptModules: [] });
    expect((await t.admin.post('/api/project/script-module', { projectId, scriptModuleId: zeta })).status).toBe(200);
    expect((await t.admin.post('/api/project/script-module', { projectId, scriptModuleId: zeta })).status).toBe(200);
    expect((await t.admin.post('/api/project/script-module', { projectId, scriptModuleId: alpha })).status).toBe(200);
    expect(await read()).toEqual({
      projectId,
      scriptModules: [
        { scriptModuleId: alpha, name: 'Alpha', scriptLanguage: 'bash' },
        { scriptModuleId: zeta, name: 'Zeta', scriptLanguage: 'python' },
      ],
    });

    expect(
      (await t.admin.put('/api/project/script-modules', { projectId, scriptModuleIds: [zeta, zeta] })).status,
    ).toBe(200);
    expect(await importedIds(projectId)).toEqual([zeta]);

    expect((await t.admin.delete('/api/project/script-module', { projectId, scriptModuleId: zeta })).status).toBe(200);
    expect(await importedIds(projectId)).toEqual([]);
    const notImported = await t.admin.delete('/api/project/script-module', { projectId, scriptModuleId: zeta });
    expect(notImported.status).toBe(400);
    expect(notImported.body.validationErrors[0].property).toBe('scriptModuleId');
  });

  it('refuses modules of another workspace, unknown modules and unknown or deleted projects, changing nothing', async () => {
    const other = await t.workspace();
    const foreign = await module('Foreign', {}, other);
    const own = await module('Own');
    const projectId = await project('Strict');
    await t.admin.put('/api/project/script-modules', { projectId, scriptModuleIds: [own] });

    const cases = [
      await t.admin.put('/api/project/script-modules', { projectId, scriptModuleIds: [own, foreign] }),
      await t.admin.put('/api/project/script-modules', { projectId, scriptModuleIds: ['nope'] }),
      await t.admin.post('/api/project/script-module', { projectId, scriptModuleId: foreign }),
      await t.admin.post('/api/project/script-module', { projectId: 'nope', scriptModuleId: own }),
      await t.admin.put('/api/project/script-modules', { projectId, scriptModuleIds: 'all' }),
      await t.admin.get('/api/project/script-modules', { projectId: 'nope' }),
    ];
    expect(cases.map((r) => r.status)).toEqual([400, 400, 400, 400, 400, 400]);
    expect(await importedIds(projectId)).toEqual([own]);

    const deleted = await project('Deleted importer');
    await t.admin.delete('/api/project', { projectId: deleted });
    expect((await t.admin.get('/api/project/script-modules', { projectId: deleted })).status).toBe(400);
    expect((await t.admin.post('/api/project/script-module', { projectId: deleted, scriptModuleId: own })).status).toBe(
      400,
    );
  });
});

describe('script module permissions', () => {
  it('lets a View account read modules and imports but change neither', async () => {
    const scriptModuleId = await module('Viewed');
    const projectId = await project('Viewed project');
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/script-module', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    expect((await viewer.get('/api/project/script-modules', { projectId })).status).toBe(200);
    const create = await viewer.post('/api/script-module', {
      workspaceId: t.mainWorkspaceId,
      name: 'Nope',
      script: '',
      scriptLanguage: 'sh',
    });
    expect(create.status).toBe(401);
    expect(create.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    const importing = await viewer.post('/api/project/script-module', { projectId, scriptModuleId });
    expect(importing.status).toBe(401);
    expect(importing.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
    expect(await importedIds(projectId)).toEqual([]);
  });

  it('limits a project-scoped editor to its projects', async () => {
    const scriptModuleId = await module('Scoped');
    const mine = await project('Mine');
    const theirs = await project('Theirs');
    const editor = await t.account([{ role: 'EditProject', projectIds: [mine] }]);
    expect((await editor.post('/api/project/script-module', { projectId: mine, scriptModuleId })).status).toBe(200);
    const refused = await editor.post('/api/project/script-module', { projectId: theirs, scriptModuleId });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
    expect(await importedIds(theirs)).toEqual([]);
    expect(await importedIds(mine)).toEqual([scriptModuleId]);
  });

  it('treats another workspace as unknown', async () => {
    const scriptModuleId = await module('Private module');
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    expect((await outsider.get('/api/script-module', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
    expect((await outsider.get('/api/script-module/details', { scriptModuleId })).status).toBe(400);
    expect((await outsider.delete('/api/script-module', { scriptModuleId })).status).toBe(400);
    expect(await t.db('script_modules').where({ id: scriptModuleId })).toHaveLength(1);
  });
});
