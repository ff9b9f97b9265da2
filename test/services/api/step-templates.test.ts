import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
beforeAll(async () => {
  t = await testApp();
});

const properties = JSON.stringify([
  { Id: 'Package', Name: 'Package', Description: 'What to deploy', DefaultValue: null, ControlType: 'PackageSelector' },
  { Id: 'Folder', Name: 'Install folder', Description: null, DefaultValue: '/opt/app', ControlType: 'SingleLineText' },
]);

async function createTemplate(overrides: Record<string, unknown> = {}) {
  const response = await t.admin.post('/api/step-template', {
    workspaceId: t.mainWorkspaceId,
    name: `Template ${Math.random().toString(36).slice(2, 8)}`,
    script: 'echo hello',
    scriptLanguage: 'bash',
    ...overrides,
  });
  expect(response.status, response.text).toBe(200);
  return response.body.stepTemplateId as string;
}

describe('POST /api/step-template', () => {
  it('creates a template that details then returns with every field', async () => {
    const created = await t.admin.post('/api/step-template', {
      workspaceId: t.mainWorkspaceId,
      name: 'Deploy package',
      description: 'extracts and installs',
      script: 'tar xzf "$PKG"',
      scriptLanguage: 'sh',
      supportedRunModes: ['TargetMachine', 'WorkerToCloudTargets'],
      propertiesRaw: properties,
    });
    expect(created.status).toBe(200);
    const details = await t.admin.get('/api/step-template/details', { stepTemplateId: created.body.stepTemplateId });
    expect(details.body).toEqual({
      stepTemplateId: created.body.stepTemplateId,
      workspaceId: t.mainWorkspaceId,
      name: 'Deploy package',
      description: 'extracts and installs',
      script: 'tar xzf "$PKG"',
      scriptLanguage: 'sh',
      supportedRunModes: ['TargetMachine', 'WorkerToCloudTargets'],
      propertiesRaw: properties,
    });
    const [row] = await t.db('step_templates').where({ id: created.body.stepTemplateId });
    expect(row).toMatchObject({ script_language: 'sh', properties_raw: properties, deleted_at: null });
  });

  it('defaults run modes to TargetMachine and properties to an empty list', async () => {
    const id = await createTemplate({ name: 'Minimal' });
    const details = await t.admin.get('/api/step-template/details', { stepTemplateId: id });
    expect(details.body).toMatchObject({
      description: null,
      supportedRunModes: ['TargetMachine'],
      propertiesRaw: '[]',
    });
  });

  it('refuses an unknown scriptLanguage, a missing script and wrong types with 400', async () => {
    const base = { workspaceId: t.mainWorkspaceId, name: 'Bad', script: 'x', scriptLanguage: 'bash' };
    for (const body of [
      { ...base, scriptLanguage: 'ruby' },
      { ...base, script: undefined },
      { ...base, name: 7 },
      { ...base, supportedRunModes: 'TargetMachine' },
      { ...base, supportedRunModes: [] },
      { ...base, supportedRunModes: ['TargetMachine', 'TargetMachine'] },
      { ...base, name: 'x'.repeat(201) },
    ]) {
      const response = await t.admin.post('/api/step-template', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
    expect(await t.db('step_templates').whereRaw("lower(name) = 'bad'")).toHaveLength(0);
  });

  it('refuses propertiesRaw that is not a JSON list of property definitions', async () => {
    for (const raw of [
      'not json',
      '{"Id":"x"}',
      '[1]',
      '[{"Name":"no id","ControlType":"SingleLineText"}]',
      '[{"Id":"A","Name":"A"}]',
      '[{"Id":"A","Name":"A","ControlType":"Checkbox"},{"Id":"A","Name":"B","ControlType":"Checkbox"}]',
      '[{"Id":"A","Name":"A","ControlType":"Checkbox","Description":5}]',
      '[{"Id":"G","Name":"G","ControlType":"PropertyGroup","Properties":[{"Id":"","Name":"x","ControlType":"Checkbox"}]}]',
    ]) {
      const response = await t.admin.post('/api/step-template', {
        workspaceId: t.mainWorkspaceId,
        name: 'Props',
        script: 'x',
        scriptLanguage: 'bash',
        propertiesRaw: raw,
      });
      expect(response.status, raw).toBe(400);
      expect(response.body.validationErrors[0].property).toBe('propertiesRaw');
    }
  });

  it('accepts nested property groups and extra definition fields', async () => {
    const raw = JSON.stringify([
      {
        Id: 'G',
        Name: 'Group',
        ControlType: 'PropertyGroup',
        Properties: [
          { Id: 'G.Pick', Name: 'Pick', ControlType: 'DropDownList', ControlValues: [{ Name: 'a', Value: 'a' }] },
        ],
      },
    ]);
    const id = await createTemplate({ propertiesRaw: raw });
    expect((await t.admin.get('/api/step-template/details', { stepTemplateId: id })).body.propertiesRaw).toBe(raw);
  });

  it('refuses a duplicate name in any case, and an unknown workspace', async () => {
    await createTemplate({ name: 'Unique one' });
    const duplicate = await t.admin.post('/api/step-template', {
      workspaceId: t.mainWorkspaceId,
      name: 'UNIQUE ONE',
      script: 'x',
      scriptLanguage: 'bash',
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors).toEqual([{ property: 'name', messages: [expect.any(String)] }]);
    const unknown = await t.admin.post('/api/step-template', {
      workspaceId: 'nope',
      name: 'X',
      script: 'x',
      scriptLanguage: 'bash',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain('workspaceId');
  });
});

describe('GET /api/step-template', () => {
  it('pages through the templates of one workspace by name', async () => {
    const other = await t.workspace();
    await t.admin.post('/api/step-template', {
      workspaceId: other,
      name: 'Other ws',
      script: 'x',
      scriptLanguage: 'python',
    });
    const all = await t.admin.get('/api/step-template', { workspaceId: t.mainWorkspaceId });
    expect(all.status).toBe(200);
    const names = all.body.stepTemplates.map((s: { name: string }) => s.name);
    expect(names).not.toContain('Other ws');
    expect(names).toEqual([...names].sort((a: string, b: string) => (a < b ? -1 : 1)));
    expect(all.body.totalCount).toBe(names.length);
    const page = await t.admin.get('/api/step-template', { workspaceId: t.mainWorkspaceId, skip: 1, take: 1 });
    expect(page.body.stepTemplates).toHaveLength(1);
    expect(page.body.stepTemplates[0].name).toBe(names[1]);
    expect(page.body.totalCount).toBe(names.length);
  });

  it('refuses an unknown workspace and a bad take with 400', async () => {
    expect((await t.admin.get('/api/step-template', { workspaceId: 'missing' })).status).toBe(400);
    expect((await t.admin.get('/api/step-template', { workspaceId: t.mainWorkspaceId, take: 0 })).status).toBe(400);
  });
});

describe('GET /api/step-template/details', () => {
  it('finds a template by workspace and name, case-insensitively', async () => {
    const id = await createTemplate({ name: 'Find Me' });
    const byName = await t.admin.get('/api/step-template/details', { workspaceId: t.mainWorkspaceId, name: 'find me' });
    expect(byName.status).toBe(200);
    expect(byName.body.stepTemplateId).toBe(id);
  });

  it('answers 400 for an unknown ID, an unknown name, and neither given', async () => {
    expect((await t.admin.get('/api/step-template/details', { stepTemplateId: 'nope' })).status).toBe(400);
    const byName = await t.admin.get('/api/step-template/details', {
      workspaceId: t.mainWorkspaceId,
      name: 'no such template',
    });
    expect(byName.status).toBe(400);
    expect(byName.body.validationErrors[0].property).toBe('name');
    const neither = await t.admin.get('/api/step-template/details', {});
    expect(neither.status).toBe(400);
    expect((await t.admin.get('/api/step-template/details', { name: 'Find Me' })).status).toBe(400);
  });
});

describe('PUT /api/step-template', () => {
  it('changes only the fields sent', async () => {
    const id = await createTemplate({ name: 'Editable', description: 'keep me', propertiesRaw: properties });
    const updated = await t.admin.put('/api/step-template', {
      stepTemplateId: id,
      script: 'echo changed',
      scriptLanguage: 'powershell',
      supportedRunModes: ['Worker'],
    });
    expect(updated.status).toBe(200);
    expect(updated.text).toBe('');
    const [row] = await t.db('step_templates').where({ id });
    expect(row).toMatchObject({
      name: 'Editable',
      description: 'keep me',
      script: 'echo changed',
      script_language: 'powershell',
      supported_run_modes: ['Worker'],
      properties_raw: properties,
    });
  });

  it('refuses invalid propertiesRaw, a duplicate name and an unknown ID with 400, changing nothing', async () => {
    const id = await createTemplate({ name: 'Stable' });
    await createTemplate({ name: 'Taken' });
    expect((await t.admin.put('/api/step-template', { stepTemplateId: id, propertiesRaw: '[{}]' })).status).toBe(400);
    expect((await t.admin.put('/api/step-template', { stepTemplateId: id, name: 'taken' })).status).toBe(400);
    expect((await t.admin.put('/api/step-template', { stepTemplateId: 'missing', name: 'x' })).status).toBe(400);
    const [row] = await t.db('step_templates').where({ id });
    expect(row).toMatchObject({ name: 'Stable', properties_raw: '[]' });
  });
});

describe('DELETE /api/step-template', () => {
  it('soft-deletes: the template disappears and its name is free again', async () => {
    const id = await createTemplate({ name: 'Short lived' });
    const deleted = await t.admin.delete('/api/step-template', { stepTemplateId: id });
    expect(deleted.status).toBe(200);
    const [row] = await t.db('step_templates').where({ id });
    expect(row.deleted_at).not.toBeNull();
    expect((await t.admin.get('/api/step-template/details', { stepTemplateId: id })).status).toBe(400);
    expect(
      (await t.admin.get('/api/step-template/details', { workspaceId: t.mainWorkspaceId, name: 'Short lived' })).status,
    ).toBe(400);
    const list = await t.admin.get('/api/step-template', { workspaceId: t.mainWorkspaceId, take: 500 });
    expect(list.body.stepTemplates.map((s: { stepTemplateId: string }) => s.stepTemplateId)).not.toContain(id);
    await createTemplate({ name: 'Short lived' });
    expect((await t.admin.delete('/api/step-template', { stepTemplateId: id })).status).toBe(400);
  });
});

describe('step template permissions', () => {
  it('lets a View account read but not write, answering 401/2003', async () => {
    const id = await createTemplate();
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/step-template', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    expect((await viewer.get('/api/step-template/details', { stepTemplateId: id })).status).toBe(200);
    for (const response of [
      await viewer.post('/api/step-template', {
        workspaceId: t.mainWorkspaceId,
        name: 'Nope',
        script: 'x',
        scriptLanguage: 'bash',
      }),
      await viewer.put('/api/step-template', { stepTemplateId: id, name: 'Nope' }),
      await viewer.delete('/api/step-template', { stepTemplateId: id }),
    ]) {
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    }
    const editor = await t.account([{ role: 'EditProject' }]);
    expect((await editor.get('/api/step-template', { workspaceId: t.mainWorkspaceId })).body.errorcode).toBe(2003);
  });

  it("treats another workspace's templates as unknown", async () => {
    const other = await t.workspace();
    const foreign = await t.admin.post('/api/step-template', {
      workspaceId: other,
      name: 'Foreign',
      script: 'x',
      scriptLanguage: 'bash',
    });
    const insider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }]);
    expect(
      (await insider.get('/api/step-template/details', { stepTemplateId: foreign.body.stepTemplateId })).status,
    ).toBe(400);
    expect((await insider.get('/api/step-template', { workspaceId: other })).status).toBe(400);
    expect(
      (await insider.put('/api/step-template', { stepTemplateId: foreign.body.stepTemplateId, name: 'Mine' })).status,
    ).toBe(400);
    expect((await insider.delete('/api/step-template', { stepTemplateId: foreign.body.stepTemplateId })).status).toBe(
      400,
    );
    const [row] = await t.db('step_templates').where({ id: foreign.body.stepTemplateId });
    expect(row).toMatchObject({ name: 'Foreign', deleted_at: null });
  });
});
