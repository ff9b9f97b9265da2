import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let projectId: string;
let otherProjectId: string;
let stagingId: string;
let productionId: string;

// Machines, steps and channels are created with raw inserts: their APIs are being built in
// parallel, and these tests only need rows for filters to point at.
async function machine(workspaceId: string): Promise<string> {
  const id = randomUUID();
  await t.db('machines').insert({ id, workspace_id: workspaceId, name: `m-${id}` });
  return id;
}

async function step(forProjectId: string, workspaceId = t.mainWorkspaceId): Promise<string> {
  const templateId = randomUUID();
  await t
    .db('step_templates')
    .insert({ id: templateId, workspace_id: workspaceId, name: `tpl-${templateId}`, script_language: 'bash' });
  const id = randomUUID();
  await t
    .db('project_steps')
    .insert({ id, project_id: forProjectId, name: `s-${id}`, step_template_id: templateId, sort_order: 1 });
  return id;
}

async function channel(forProjectId: string): Promise<string> {
  const id = randomUUID();
  await t.db('channels').insert({ id, project_id: forProjectId, name: `c-${id}` });
  return id;
}

async function tag(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/tag', { workspaceId, name: `tag-${randomUUID()}` });
  return created.body.tagId;
}

async function project(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/project', { workspaceId, name: `p-${randomUUID()}` });
  expect(created.status).toBe(200);
  return created.body.projectId;
}

async function variable(body: Record<string, unknown> = {}): Promise<string> {
  const created = await t.admin.post('/api/project/variable', {
    projectId,
    name: `v-${randomUUID()}`,
    variableType: 'Text',
    ...body,
  });
  expect(created.status, created.text).toBe(200);
  return created.body.variableId;
}

async function variablesOf(id: string) {
  const list = await t.admin.get('/api/project/variables', { projectId: id });
  expect(list.status).toBe(200);
  return list.body.variables as Array<{
    variableId: string;
    name: string;
    variableType: string;
    description: string | null;
    values: any[];
  }>;
}

beforeAll(async () => {
  t = await testApp();
  projectId = await project();
  otherProjectId = await project();
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  stagingId = environments.body.environments.find((e: { name: string }) => e.name === 'Staging').environmentId;
  productionId = environments.body.environments.find((e: { name: string }) => e.name === 'Production').environmentId;
});

describe('POST /api/project/variable', () => {
  it('creates a variable that the list shows with no values', async () => {
    const created = await t.admin.post('/api/project/variable', {
      projectId,
      name: 'DbHost',
      description: 'database',
      variableType: 'Text',
    });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({ variableId: expect.any(String) });
    const listed = (await variablesOf(projectId)).find((v) => v.variableId === created.body.variableId);
    expect(listed).toEqual({
      variableId: created.body.variableId,
      name: 'DbHost',
      description: 'database',
      variableType: 'Text',
      values: [],
    });
    const [row] = await t.db('variables').where({ id: created.body.variableId });
    expect(row).toMatchObject({
      project_id: projectId,
      workspace_id: t.mainWorkspaceId,
      variable_type: 'Text',
      deleted_at: null,
    });
  });

  it('refuses a duplicate name in the same project, in any case, but allows it in another project', async () => {
    await variable({ name: 'Shared' });
    const duplicate = await t.admin.post('/api/project/variable', { projectId, name: 'SHARED', variableType: 'Text' });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'name' }] });
    const elsewhere = await t.admin.post('/api/project/variable', {
      projectId: otherProjectId,
      name: 'Shared',
      variableType: 'Text',
    });
    expect(elsewhere.status).toBe(200);
  });

  it('allows a project variable with the name of a workspace variable', async () => {
    expect(
      (
        await t.admin.post('/api/workspace-variable', {
          workspaceId: t.mainWorkspaceId,
          name: 'Region',
          variableType: 'Text',
        })
      ).status,
    ).toBe(200);
    expect(
      (await t.admin.post('/api/project/variable', { projectId, name: 'Region', variableType: 'Text' })).status,
    ).toBe(200);
  });

  it("refuses an unknown, a deleted and another workspace's project with 400", async () => {
    expect(
      (await t.admin.post('/api/project/variable', { projectId: 'nope', name: 'X', variableType: 'Text' })).body,
    ).toMatchObject({
      errorcode: 3001,
      error: expect.stringContaining('projectId'),
    });
    const deleted = await project();
    await t.admin.delete('/api/project', { projectId: deleted });
    expect(
      (await t.admin.post('/api/project/variable', { projectId: deleted, name: 'X', variableType: 'Text' })).status,
    ).toBe(400);
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'EditProject' }, { role: 'View' }], other);
    expect((await outsider.post('/api/project/variable', { projectId, name: 'X', variableType: 'Text' })).status).toBe(
      400,
    );
    expect((await outsider.get('/api/project/variables', { projectId })).status).toBe(400);
  });

  it('refuses a missing or unknown type, a wrong name type and a blank name with 400', async () => {
    for (const body of [
      { projectId, name: 'A' },
      { projectId, name: 'A', variableType: 'Secret' },
      { projectId, name: 5, variableType: 'Text' },
      { projectId, name: '  ', variableType: 'Text' },
      { projectId, name: 'x'.repeat(201), variableType: 'Text' },
    ]) {
      const response = await t.admin.post('/api/project/variable', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
    expect((await variablesOf(projectId)).some((v) => v.name === 'A')).toBe(false);
  });

  it('binds property names case-insensitively', async () => {
    const created = await t.admin.post('/api/project/variable', {
      PROJECTID: projectId,
      Name: 'CaseBound',
      VariableType: 'Sensitive',
    });
    expect(created.status).toBe(200);
    expect((await variablesOf(projectId)).find((v) => v.name === 'CaseBound')?.variableType).toBe('Sensitive');
  });
});

describe('PUT /api/project/variable', () => {
  it('changes only the fields sent', async () => {
    const id = await variable({ name: 'Before', description: 'keep' });
    expect((await t.admin.put('/api/project/variable', { variableId: id, name: 'After' })).status).toBe(200);
    expect((await variablesOf(projectId)).find((v) => v.variableId === id)).toMatchObject({
      name: 'After',
      description: 'keep',
      variableType: 'Text',
    });
    await t.admin.put('/api/project/variable', { variableId: id, description: null });
    expect((await variablesOf(projectId)).find((v) => v.variableId === id)).toMatchObject({
      name: 'After',
      description: null,
    });
  });

  it("refuses renaming onto another variable's name", async () => {
    await variable({ name: 'Taken' });
    const id = await variable();
    const response = await t.admin.put('/api/project/variable', { variableId: id, name: 'taken' });
    expect(response.status).toBe(400);
    expect(response.body.validationErrors[0].property).toBe('name');
  });

  it('refuses an unknown variable and a workspace variable with 400', async () => {
    expect((await t.admin.put('/api/project/variable', { variableId: 'nope', name: 'x' })).status).toBe(400);
    const ws = await t.admin.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: `w-${randomUUID()}`,
      variableType: 'Text',
    });
    const response = await t.admin.put('/api/project/variable', { variableId: ws.body.variableId, name: 'x' });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('variableId');
  });

  it('encrypts existing values when a Text variable becomes Sensitive', async () => {
    const id = await variable();
    const value = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'plain-then-secret' });
    expect((await t.admin.put('/api/project/variable', { variableId: id, variableType: 'Sensitive' })).status).toBe(
      200,
    );
    const [row] = await t.db('variable_values').where({ id: value.body.variableValueId });
    expect(row.value_plain).toBeNull();
    expect(JSON.stringify(row)).not.toContain('plain-then-secret');
    expect(t.deps.secrets.decrypt(row.value_encrypted)).toBe('plain-then-secret');
    const listed = (await variablesOf(projectId)).find((v) => v.variableId === id);
    expect(listed?.values[0].theValue).toBeNull();
  });

  it('refuses making a Sensitive variable with values Text, and allows it without values', async () => {
    const id = await variable({ variableType: 'Sensitive' });
    const value = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'hidden' });
    const refused = await t.admin.put('/api/project/variable', {
      variableId: id,
      variableType: 'Text',
      name: 'RenamedToo',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.validationErrors[0].property).toBe('variableType');
    const [variableRow] = await t.db('variables').where({ id });
    expect(variableRow.variable_type).toBe('Sensitive');
    expect(variableRow.name).not.toBe('RenamedToo');
    await t.admin.delete('/api/project/variable/value', { variableValueId: value.body.variableValueId });
    expect((await t.admin.put('/api/project/variable', { variableId: id, variableType: 'Text' })).status).toBe(200);
    expect((await t.db('variables').where({ id }))[0].variable_type).toBe('Text');
  });
});

describe('DELETE /api/project/variable', () => {
  it('soft-deletes the variable and its values and frees the name', async () => {
    const id = await variable({ name: 'Doomed' });
    const value = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'x' });
    expect((await t.admin.delete('/api/project/variable', { variableId: id })).status).toBe(200);
    expect((await variablesOf(projectId)).some((v) => v.variableId === id)).toBe(false);
    expect((await t.db('variables').where({ id }))[0].deleted_at).not.toBeNull();
    expect((await t.db('variable_values').where({ id: value.body.variableValueId }))[0].deleted_at).not.toBeNull();
    expect(
      (await t.admin.post('/api/project/variable', { projectId, name: 'Doomed', variableType: 'Text' })).status,
    ).toBe(200);
    expect((await t.admin.delete('/api/project/variable', { variableId: id })).status).toBe(400);
    expect(
      (await t.admin.put('/api/project/variable/value', { variableValueId: value.body.variableValueId, theValue: 'y' }))
        .status,
    ).toBe(400);
  });
});

describe('POST /api/project/variable/value', () => {
  it('stores a value with every kind of filter and lists it', async () => {
    const id = await variable();
    const [machineId, stepId, channelId, tagA, tagB] = [
      await machine(t.mainWorkspaceId),
      await step(projectId),
      await channel(projectId),
      await tag(),
      await tag(),
    ];
    const created = await t.admin.post('/api/project/variable/value', {
      variableId: id,
      theValue: 'scoped',
      environmentsFilter: [productionId, productionId],
      machineFilter: [machineId],
      tagFilter: [{ tagIds: [tagA, tagB] }],
      stepFilter: [stepId],
      channelFilter: [channelId],
    });
    expect(created.status, created.text).toBe(200);
    const listed = (await variablesOf(projectId)).find((v) => v.variableId === id);
    expect(listed?.values).toEqual([
      {
        variableValueId: created.body.variableValueId,
        theValue: 'scoped',
        environmentsFilter: [productionId],
        machineFilter: [machineId],
        tagFilter: [{ tagIds: [tagA, tagB] }],
        stepFilter: [stepId],
        channelFilter: [channelId],
      },
    ]);
    const [row] = await t.db('variable_values').where({ id: created.body.variableValueId });
    expect(row).toMatchObject({
      variable_id: id,
      value_plain: 'scoped',
      value_encrypted: null,
      environments_filter: [productionId],
      step_filter: [stepId],
    });
  });

  it('stores an unscoped value with empty filters, also when filters are null', async () => {
    const id = await variable();
    const created = await t.admin.post('/api/project/variable/value', {
      variableId: id,
      theValue: '',
      environmentsFilter: null,
      tagFilter: null,
    });
    expect(created.status).toBe(200);
    const listed = (await variablesOf(projectId)).find((v) => v.variableId === id);
    expect(listed?.values[0]).toMatchObject({
      theValue: '',
      environmentsFilter: [],
      machineFilter: [],
      tagFilter: [],
      stepFilter: [],
      channelFilter: [],
    });
  });

  it('refuses filter IDs that are unknown, deleted, of another workspace or of another project', async () => {
    const id = await variable();
    const other = await t.workspace();
    const foreignEnvironment = (await t.admin.post('/api/environment', { workspaceId: other, name: 'Foreign' })).body
      .environmentId;
    const deletedEnvironment = (
      await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: `gone-${randomUUID()}` })
    ).body.environmentId;
    await t.admin.delete('/api/environment', { environmentId: deletedEnvironment });
    const cases: Array<[string, Record<string, unknown>]> = [
      ['environmentsFilter', { environmentsFilter: ['nope'] }],
      ['environmentsFilter', { environmentsFilter: [foreignEnvironment] }],
      ['environmentsFilter', { environmentsFilter: [stagingId, deletedEnvironment] }],
      ['machineFilter', { machineFilter: [await machine(other)] }],
      ['machineFilter', { machineFilter: ['nope'] }],
      ['tagFilter', { tagFilter: [{ tagIds: [await tag(other)] }] }],
      ['stepFilter', { stepFilter: [await step(otherProjectId)] }],
      ['stepFilter', { stepFilter: ['nope'] }],
      ['channelFilter', { channelFilter: [await channel(otherProjectId)] }],
    ];
    for (const [property, filters] of cases) {
      const response = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'x', ...filters });
      expect(response.status, JSON.stringify(filters)).toBe(400);
      expect(response.body.validationErrors[0].property).toBe(property);
    }
    expect(await t.db('variable_values').where({ variable_id: id })).toHaveLength(0);
  });

  it('refuses bad bodies with 400', async () => {
    const id = await variable();
    for (const body of [
      { variableId: id },
      { variableId: id, theValue: 5 },
      { variableId: id, theValue: null },
      { variableId: id, theValue: 'x'.repeat(1_000_001) },
      { variableId: id, theValue: 'x', environmentsFilter: 'prod' },
      { variableId: id, theValue: 'x', tagFilter: [{ tagIds: [] }] },
      { variableId: id, theValue: 'x', tagFilter: [['a']] },
      { variableId: 'nope', theValue: 'x' },
    ]) {
      const response = await t.admin.post('/api/project/variable/value', body);
      expect(response.status, JSON.stringify(body).slice(0, 100)).toBe(400);
    }
    expect(await t.db('variable_values').where({ variable_id: id })).toHaveLength(0);
  });
});

describe('PUT and DELETE /api/project/variable/value', () => {
  it('changes only the fields sent, and clears a filter sent as []', async () => {
    const id = await variable();
    const created = await t.admin.post('/api/project/variable/value', {
      variableId: id,
      theValue: 'one',
      environmentsFilter: [stagingId],
    });
    const valueId = created.body.variableValueId;
    expect(
      (await t.admin.put('/api/project/variable/value', { variableValueId: valueId, theValue: 'two' })).status,
    ).toBe(200);
    let listed = (await variablesOf(projectId)).find((v) => v.variableId === id);
    expect(listed?.values[0]).toMatchObject({ theValue: 'two', environmentsFilter: [stagingId] });
    expect(
      (await t.admin.put('/api/project/variable/value', { variableValueId: valueId, environmentsFilter: [] })).status,
    ).toBe(200);
    listed = (await variablesOf(projectId)).find((v) => v.variableId === id);
    expect(listed?.values[0]).toMatchObject({ theValue: 'two', environmentsFilter: [] });
  });

  it('refuses an unknown value, a bad filter and a workspace value with 400, changing nothing', async () => {
    const id = await variable();
    const created = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'keep' });
    expect((await t.admin.put('/api/project/variable/value', { variableValueId: 'nope', theValue: 'x' })).status).toBe(
      400,
    );
    const bad = await t.admin.put('/api/project/variable/value', {
      variableValueId: created.body.variableValueId,
      theValue: 'changed',
      environmentsFilter: ['nope'],
    });
    expect(bad.status).toBe(400);
    expect((await t.db('variable_values').where({ id: created.body.variableValueId }))[0].value_plain).toBe('keep');
    const ws = await t.admin.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: `w-${randomUUID()}`,
      variableType: 'Text',
    });
    const wsValue = await t.admin.post('/api/workspace-variable/value', {
      variableId: ws.body.variableId,
      theValue: 'w',
    });
    expect(
      (
        await t.admin.put('/api/project/variable/value', {
          variableValueId: wsValue.body.variableValueId,
          theValue: 'x',
        })
      ).status,
    ).toBe(400);
    expect(
      (await t.admin.delete('/api/project/variable/value', { variableValueId: wsValue.body.variableValueId })).status,
    ).toBe(400);
  });

  it('deletes a value softly', async () => {
    const id = await variable();
    const created = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'bye' });
    expect(
      (await t.admin.delete('/api/project/variable/value', { variableValueId: created.body.variableValueId })).status,
    ).toBe(200);
    expect((await variablesOf(projectId)).find((v) => v.variableId === id)?.values).toEqual([]);
    expect((await t.db('variable_values').where({ id: created.body.variableValueId }))[0].deleted_at).not.toBeNull();
    expect(
      (await t.admin.delete('/api/project/variable/value', { variableValueId: created.body.variableValueId })).status,
    ).toBe(400);
  });
});

describe('Sensitive project variables', () => {
  it('stores values encrypted and never returns them', async () => {
    const id = await variable({ variableType: 'Sensitive' });
    const created = await t.admin.post('/api/project/variable/value', {
      variableId: id,
      theValue: 'correct-horse-battery-staple',
    });
    expect(created.status).toBe(200);
    expect(created.text).not.toContain('correct-horse');
    const [row] = await t.db('variable_values').where({ id: created.body.variableValueId });
    expect(row.value_plain).toBeNull();
    expect(JSON.stringify(row)).not.toContain('correct-horse-battery-staple');
    expect(t.deps.secrets.decrypt(row.value_encrypted)).toBe('correct-horse-battery-staple');
    const list = await t.admin.get('/api/project/variables', { projectId });
    expect(list.text).not.toContain('correct-horse');
    expect(list.body.variables.find((v: { variableId: string }) => v.variableId === id).values[0].theValue).toBeNull();
  });

  it('re-encrypts a changed value and keeps it when only filters change', async () => {
    const id = await variable({ variableType: 'Sensitive' });
    const created = await t.admin.post('/api/project/variable/value', { variableId: id, theValue: 'first-secret' });
    await t.admin.put('/api/project/variable/value', {
      variableValueId: created.body.variableValueId,
      theValue: 'second-secret',
    });
    let [row] = await t.db('variable_values').where({ id: created.body.variableValueId });
    expect(row.value_plain).toBeNull();
    expect(t.deps.secrets.decrypt(row.value_encrypted)).toBe('second-secret');
    await t.admin.put('/api/project/variable/value', {
      variableValueId: created.body.variableValueId,
      environmentsFilter: [stagingId],
    });
    [row] = await t.db('variable_values').where({ id: created.body.variableValueId });
    expect(t.deps.secrets.decrypt(row.value_encrypted)).toBe('second-secret');
  });
});

describe('project variable permissions', () => {
  it('lets a View account read but not write', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/project/variables', { projectId })).status).toBe(200);
    const id = await variable();
    for (const [method, path, body] of [
      ['post', '/api/project/variable', { projectId, name: 'Nope', variableType: 'Text' }],
      ['put', '/api/project/variable', { variableId: id, name: 'Nope' }],
      ['delete', '/api/project/variable', { variableId: id }],
      ['post', '/api/project/variable/value', { variableId: id, theValue: 'x' }],
    ] as const) {
      const refused = await viewer[method](path, body);
      expect(refused.status, `${method} ${path}`).toBe(401);
      expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
    }
    expect((await t.db('variables').where({ id }))[0]).toMatchObject({
      name: expect.stringMatching(/^v-/),
      deleted_at: null,
    });
  });

  it('refuses an EditProject account limited to another project', async () => {
    const limited = await t.account([{ role: 'EditProject', projectIds: [otherProjectId] }]);
    const refused = await limited.post('/api/project/variable', { projectId, name: 'Nope', variableType: 'Text' });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
    expect(
      (await limited.post('/api/project/variable', { projectId: otherProjectId, name: 'Mine', variableType: 'Text' }))
        .status,
    ).toBe(200);
  });

  it("refuses values scoped to environments outside an account's environment limits", async () => {
    const limited = await t.account([{ role: 'EditProject', environmentIds: [stagingId] }]);
    const id = await variable();
    const refused = await limited.post('/api/project/variable/value', {
      variableId: id,
      theValue: 'p',
      environmentsFilter: [productionId],
    });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toContain(productionId);
    const allowed = await limited.post('/api/project/variable/value', {
      variableId: id,
      theValue: 's',
      environmentsFilter: [stagingId],
    });
    expect(allowed.status).toBe(200);
    const production = await t.admin.post('/api/project/variable/value', {
      variableId: id,
      theValue: 'p',
      environmentsFilter: [productionId],
    });
    expect(
      (
        await limited.put('/api/project/variable/value', {
          variableValueId: production.body.variableValueId,
          theValue: 'hijack',
        })
      ).status,
    ).toBe(401);
    expect((await limited.delete('/api/project/variable', { variableId: id })).status).toBe(401);
    expect((await t.db('variable_values').where({ id: production.body.variableValueId }))[0].value_plain).toBe('p');
  });
});

describe('variables store: copyProjectVariables', () => {
  it('copies live variables, values (ciphertext included) and imports, remapping step and channel IDs', async () => {
    const from = await project();
    const to = await project();
    const [oldStep, newStep, oldChannel] = [await step(from), await step(to), await channel(from)];
    const text = (
      await t.admin.post('/api/project/variable', { projectId: from, name: 'Copied', variableType: 'Text' })
    ).body.variableId;
    await t.admin.post('/api/project/variable/value', {
      variableId: text,
      theValue: 'a',
      stepFilter: [oldStep],
      channelFilter: [oldChannel],
      environmentsFilter: [stagingId],
    });
    const secret = (
      await t.admin.post('/api/project/variable', { projectId: from, name: 'Secret', variableType: 'Sensitive' })
    ).body.variableId;
    await t.admin.post('/api/project/variable/value', { variableId: secret, theValue: 'copied-secret' });
    const gone = (await t.admin.post('/api/project/variable', { projectId: from, name: 'Gone', variableType: 'Text' }))
      .body.variableId;
    await t.admin.delete('/api/project/variable', { variableId: gone });
    const ws = (
      await t.admin.post('/api/workspace-variable', {
        workspaceId: t.mainWorkspaceId,
        name: `w-${randomUUID()}`,
        variableType: 'Text',
      })
    ).body.variableId;
    await t.admin.post('/api/project/workspace-variable', { projectId: from, variableId: ws });

    await t.deps.store.transaction((tx) =>
      tx.variables.copyProjectVariables(from, to, new Map([[oldStep, newStep]]), new Date()),
    );

    const copied = await variablesOf(to);
    expect(copied.map((v) => v.name)).toEqual(['Copied', 'Secret']);
    expect(copied[0]?.variableId).not.toBe(text);
    expect(copied[0]?.values[0]).toMatchObject({
      theValue: 'a',
      stepFilter: [newStep],
      channelFilter: [oldChannel],
      environmentsFilter: [stagingId],
    });
    expect(copied[1]?.values[0].theValue).toBeNull();
    const [secretRow] = await t.db('variable_values').where({ id: copied[1]?.values[0].variableValueId });
    expect(t.deps.secrets.decrypt(secretRow.value_encrypted)).toBe('copied-secret');
    const imported = await t.admin.get('/api/project/workspace-variables', { projectId: to });
    expect(imported.body.workspaceVariables.map((v: { variableId: string }) => v.variableId)).toEqual([ws]);
    expect((await variablesOf(from)).map((v) => v.name)).toEqual(['Copied', 'Secret']);
  });
});

describe('OpenAPI', () => {
  it('documents every variable route', async () => {
    const doc = await t.anonymous.get('/api/openapi.json');
    expect(doc.status).toBe(200);
    for (const path of [
      '/api/project/variables',
      '/api/project/variable',
      '/api/project/variable/value',
      '/api/workspace-variable',
      '/api/workspace-variable/value',
      '/api/project/workspace-variables',
      '/api/project/workspace-variable',
    ]) {
      expect(doc.body.paths[path], path).toBeDefined();
    }
    expect(doc.body.paths['/api/project/variables'].get.responses['200']).toBeDefined();
  });
});
