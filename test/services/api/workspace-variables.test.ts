import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadVariableCandidates } from '../../../services/domain/variables.ts';
import { resolveVariables, substituteVariables } from '../../../services/domain/variable-resolution.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let stagingId: string;
let productionId: string;

async function wsVariable(body: Record<string, unknown> = {}): Promise<string> {
  const created = await t.admin.post('/api/workspace-variable', {
    workspaceId: t.mainWorkspaceId,
    name: `w-${randomUUID()}`,
    variableType: 'Text',
    ...body,
  });
  expect(created.status, created.text).toBe(200);
  return created.body.variableId;
}

async function listAll(workspaceId = t.mainWorkspaceId) {
  const list = await t.admin.get('/api/workspace-variable', { workspaceId, take: 500 });
  expect(list.status).toBe(200);
  return list.body.variables as Array<{
    variableId: string;
    name: string;
    variableType: string;
    description: string | null;
    values: any[];
  }>;
}

async function project(): Promise<string> {
  return (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: `p-${randomUUID()}` })).body
    .projectId;
}

async function imports(projectId: string): Promise<string[]> {
  const list = await t.admin.get('/api/project/workspace-variables', { projectId });
  expect(list.status).toBe(200);
  expect(list.body.projectId).toBe(projectId);
  return list.body.workspaceVariables.map((v: { variableId: string }) => v.variableId);
}

beforeAll(async () => {
  t = await testApp();
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  stagingId = environments.body.environments.find((e: { name: string }) => e.name === 'Staging').environmentId;
  productionId = environments.body.environments.find((e: { name: string }) => e.name === 'Production').environmentId;
});

describe('workspace variables CRUD', () => {
  it('creates a variable and lists it, paged, with its workspace', async () => {
    const created = await t.admin.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: 'Region',
      description: 'cloud region',
      variableType: 'Text',
    });
    expect(created.status).toBe(200);
    const value = await t.admin.post('/api/workspace-variable/value', {
      variableId: created.body.variableId,
      theValue: 'eu-west',
      environmentsFilter: [productionId],
    });
    expect(value.status).toBe(200);
    const list = await t.admin.get('/api/workspace-variable', { workspaceId: t.mainWorkspaceId });
    expect(list.body.workspaceId).toBe(t.mainWorkspaceId);
    expect(list.body.variables.find((v: { variableId: string }) => v.variableId === created.body.variableId)).toEqual({
      variableId: created.body.variableId,
      name: 'Region',
      description: 'cloud region',
      variableType: 'Text',
      values: [
        {
          variableValueId: value.body.variableValueId,
          theValue: 'eu-west',
          environmentsFilter: [productionId],
          machineFilter: [],
          tagFilter: [],
          stepFilter: [],
          channelFilter: [],
        },
      ],
    });
    const [row] = await t.db('variables').where({ id: created.body.variableId });
    expect(row).toMatchObject({ project_id: null, workspace_id: t.mainWorkspaceId });
  });

  it('pages with skip and take and counts every live variable', async () => {
    const workspaceId = await t.workspace();
    for (const name of ['C', 'A', 'B'])
      await t.admin.post('/api/workspace-variable', { workspaceId, name, variableType: 'Text' });
    const page = await t.admin.get('/api/workspace-variable', { workspaceId, skip: 1, take: 1 });
    expect(page.body).toMatchObject({ totalCount: 3, variables: [{ name: 'B' }] });
    expect((await t.admin.get('/api/workspace-variable', { workspaceId, take: 501 })).status).toBe(400);
  });

  it('does not list project variables', async () => {
    const projectId = await project();
    await t.admin.post('/api/project/variable', { projectId, name: 'ProjectOnly', variableType: 'Text' });
    expect((await listAll()).some((v) => v.name === 'ProjectOnly')).toBe(false);
  });

  it('refuses duplicate names case-insensitively and unknown workspaces', async () => {
    await wsVariable({ name: 'Unique' });
    const duplicate = await t.admin.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: 'UNIQUE',
      variableType: 'Text',
    });
    expect(duplicate.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'name' }] });
    expect(
      (await t.admin.post('/api/workspace-variable', { workspaceId: 'nope', name: 'X', variableType: 'Text' })).status,
    ).toBe(400);
    expect((await t.admin.get('/api/workspace-variable', { workspaceId: 'nope' })).status).toBe(400);
    expect(
      (
        await t.admin.post('/api/workspace-variable', {
          workspaceId: t.mainWorkspaceId,
          name: 'X',
          variableType: 'text',
        })
      ).status,
    ).toBe(400);
  });

  it('updates only the fields sent and refuses project variables', async () => {
    const id = await wsVariable({ name: 'Old', description: 'keep' });
    expect((await t.admin.put('/api/workspace-variable', { variableId: id, name: 'New' })).status).toBe(200);
    expect((await listAll()).find((v) => v.variableId === id)).toMatchObject({ name: 'New', description: 'keep' });
    const projectVariable = await t.admin.post('/api/project/variable', {
      projectId: await project(),
      name: 'P',
      variableType: 'Text',
    });
    expect(
      (await t.admin.put('/api/workspace-variable', { variableId: projectVariable.body.variableId, name: 'Z' })).status,
    ).toBe(400);
    expect(
      (await t.admin.delete('/api/workspace-variable', { variableId: projectVariable.body.variableId })).status,
    ).toBe(400);
    expect(
      (
        await t.admin.post('/api/workspace-variable/value', {
          variableId: projectVariable.body.variableId,
          theValue: 'x',
        })
      ).status,
    ).toBe(400);
  });

  it('soft-deletes a variable, its values and its imports, and frees the name', async () => {
    const id = await wsVariable({ name: 'Temp' });
    const value = await t.admin.post('/api/workspace-variable/value', { variableId: id, theValue: 'x' });
    const projectId = await project();
    await t.admin.post('/api/project/workspace-variable', { projectId, variableId: id });
    expect(await imports(projectId)).toEqual([id]);
    expect((await t.admin.delete('/api/workspace-variable', { variableId: id })).status).toBe(200);
    expect((await t.db('variables').where({ id }))[0].deleted_at).not.toBeNull();
    expect((await t.db('variable_values').where({ id: value.body.variableValueId }))[0].deleted_at).not.toBeNull();
    expect((await listAll()).some((v) => v.variableId === id)).toBe(false);
    expect(await imports(projectId)).toEqual([]);
    expect((await t.admin.post('/api/project/workspace-variable', { projectId, variableId: id })).status).toBe(400);
    expect(
      (
        await t.admin.put('/api/workspace-variable/value', {
          variableValueId: value.body.variableValueId,
          theValue: 'y',
        })
      ).status,
    ).toBe(400);
    expect((await t.admin.delete('/api/workspace-variable', { variableId: id })).status).toBe(400);
    await wsVariable({ name: 'Temp' });
  });
});

describe('workspace variable values', () => {
  it('updates and soft-deletes a value', async () => {
    const id = await wsVariable();
    const created = await t.admin.post('/api/workspace-variable/value', {
      variableId: id,
      theValue: 'a',
      environmentsFilter: [stagingId],
    });
    await t.admin.put('/api/workspace-variable/value', {
      variableValueId: created.body.variableValueId,
      theValue: 'b',
    });
    expect((await listAll()).find((v) => v.variableId === id)?.values[0]).toMatchObject({
      theValue: 'b',
      environmentsFilter: [stagingId],
    });
    expect(
      (await t.admin.delete('/api/workspace-variable/value', { variableValueId: created.body.variableValueId })).status,
    ).toBe(200);
    expect((await listAll()).find((v) => v.variableId === id)?.values).toEqual([]);
    expect((await t.db('variable_values').where({ id: created.body.variableValueId }))[0].deleted_at).not.toBeNull();
    expect(
      (await t.admin.delete('/api/workspace-variable/value', { variableValueId: created.body.variableValueId })).status,
    ).toBe(400);
  });

  it('refuses step and channel filters, and foreign or unknown IDs', async () => {
    const id = await wsVariable();
    const other = await t.workspace();
    const foreignEnv = (await t.admin.post('/api/environment', { workspaceId: other, name: 'E' })).body.environmentId;
    for (const [property, filters] of [
      ['stepFilter', { stepFilter: ['any'] }],
      ['channelFilter', { channelFilter: ['any'] }],
      ['environmentsFilter', { environmentsFilter: [foreignEnv] }],
      ['machineFilter', { machineFilter: ['nope'] }],
      ['tagFilter', { tagFilter: [{ tagIds: ['nope'] }] }],
    ] as const) {
      const response = await t.admin.post('/api/workspace-variable/value', {
        variableId: id,
        theValue: 'x',
        ...filters,
      });
      expect(response.status, property).toBe(400);
      expect(response.body.validationErrors[0].property).toBe(property);
    }
    expect(await t.db('variable_values').where({ variable_id: id })).toHaveLength(0);
    expect(
      (
        await t.admin.post('/api/workspace-variable/value', {
          variableId: id,
          theValue: 'x',
          stepFilter: [],
          channelFilter: null,
        })
      ).status,
    ).toBe(200);
  });

  it('encrypts Sensitive values and never returns them', async () => {
    const id = await wsVariable({ variableType: 'Sensitive' });
    const created = await t.admin.post('/api/workspace-variable/value', { variableId: id, theValue: 'ws-top-secret' });
    const [row] = await t.db('variable_values').where({ id: created.body.variableValueId });
    expect(row.value_plain).toBeNull();
    expect(JSON.stringify(row)).not.toContain('ws-top-secret');
    const list = await t.admin.get('/api/workspace-variable', { workspaceId: t.mainWorkspaceId, take: 500 });
    expect(list.text).not.toContain('ws-top-secret');
    expect(list.body.variables.find((v: { variableId: string }) => v.variableId === id).values[0].theValue).toBeNull();
    expect((await t.admin.put('/api/workspace-variable', { variableId: id, variableType: 'Text' })).status).toBe(400);
  });
});

describe('project imports of workspace variables', () => {
  it('imports, lists, replaces and removes workspace variables', async () => {
    const projectId = await project();
    const [a, b, c] = [
      await wsVariable({ name: `a-${randomUUID()}` }),
      await wsVariable({ name: `b-${randomUUID()}`, variableType: 'Sensitive' }),
      await wsVariable(),
    ];
    expect((await t.admin.post('/api/project/workspace-variable', { projectId, variableId: a })).status).toBe(200);
    expect((await t.admin.post('/api/project/workspace-variable', { projectId, variableId: a })).status).toBe(200);
    const listed = await t.admin.get('/api/project/workspace-variables', { projectId });
    expect(listed.body.workspaceVariables).toEqual([
      { variableId: a, name: expect.stringMatching(/^a-/), variableType: 'Text' },
    ]);
    expect((await t.admin.put('/api/project/workspace-variables', { projectId, variableIds: [b, c, c] })).status).toBe(
      200,
    );
    expect((await imports(projectId)).sort()).toEqual([b, c].sort());
    expect(await t.db('project_workspace_variables').where({ project_id: projectId })).toHaveLength(2);
    expect((await t.admin.delete('/api/project/workspace-variable', { projectId, variableId: b })).status).toBe(200);
    expect(await imports(projectId)).toEqual([c]);
    expect((await t.admin.delete('/api/project/workspace-variable', { projectId, variableId: b })).status).toBe(400);
    expect((await t.admin.put('/api/project/workspace-variables', { projectId, variableIds: [] })).status).toBe(200);
    expect(await imports(projectId)).toEqual([]);
  });

  it('refuses project variables, unknown IDs and variables of another workspace, changing nothing', async () => {
    const projectId = await project();
    const kept = await wsVariable();
    await t.admin.put('/api/project/workspace-variables', { projectId, variableIds: [kept] });
    const other = await t.workspace();
    const foreign = (
      await t.admin.post('/api/workspace-variable', { workspaceId: other, name: 'F', variableType: 'Text' })
    ).body.variableId;
    const projectVariable = (
      await t.admin.post('/api/project/variable', { projectId, name: 'Own', variableType: 'Text' })
    ).body.variableId;
    for (const id of [foreign, projectVariable, 'nope']) {
      expect((await t.admin.post('/api/project/workspace-variable', { projectId, variableId: id })).status).toBe(400);
      const replaced = await t.admin.put('/api/project/workspace-variables', { projectId, variableIds: [kept, id] });
      expect(replaced.status).toBe(400);
      expect(replaced.body.validationErrors[0].property).toBe('variableIds');
    }
    expect(await imports(projectId)).toEqual([kept]);
    expect((await t.admin.put('/api/project/workspace-variables', { projectId: 'nope', variableIds: [] })).status).toBe(
      400,
    );
    expect((await t.admin.put('/api/project/workspace-variables', { projectId, variableIds: 'x' })).status).toBe(400);
    expect((await t.admin.get('/api/project/workspace-variables', { projectId: 'nope' })).status).toBe(400);
  });
});

describe('workspace variable permissions', () => {
  it('lets View read, ManageWorkspace write, and EditProject manage imports only', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const editor = await t.account([{ role: 'EditProject' }, { role: 'View' }]);
    const manager = await t.account([{ role: 'ManageWorkspace' }]);
    expect((await viewer.get('/api/workspace-variable', { workspaceId: t.mainWorkspaceId })).status).toBe(200);
    const refused = await editor.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: 'Nope',
      variableType: 'Text',
    });
    expect(refused.status).toBe(401);
    expect(refused.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    const id = (
      await manager.post('/api/workspace-variable', {
        workspaceId: t.mainWorkspaceId,
        name: `m-${randomUUID()}`,
        variableType: 'Text',
      })
    ).body.variableId;
    expect(id).toEqual(expect.any(String));
    expect((await viewer.delete('/api/workspace-variable', { variableId: id })).status).toBe(401);
    expect((await viewer.post('/api/workspace-variable/value', { variableId: id, theValue: 'x' })).status).toBe(401);
    const projectId = await project();
    const refusedImport = await manager.post('/api/project/workspace-variable', { projectId, variableId: id });
    expect(refusedImport.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
    expect((await editor.post('/api/project/workspace-variable', { projectId, variableId: id })).status).toBe(200);
    expect((await t.db('variables').where({ id }))[0].deleted_at).toBeNull();
  });

  it("hides another workspace's variables entirely", async () => {
    const other = await t.workspace();
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    const id = await wsVariable();
    expect((await outsider.get('/api/workspace-variable', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
    expect((await outsider.put('/api/workspace-variable', { variableId: id, name: 'Hijack' })).status).toBe(400);
    expect((await outsider.post('/api/workspace-variable/value', { variableId: id, theValue: 'x' })).status).toBe(400);
  });
});

describe('loadVariableCandidates', () => {
  it('returns own and imported values, decrypted, which resolve with project precedence', async () => {
    const projectId = await project();
    const name = `Conn${randomUUID().slice(0, 8)}`;
    const wsId = await wsVariable({ name, variableType: 'Sensitive' });
    await t.admin.post('/api/workspace-variable/value', { variableId: wsId, theValue: 'ws-secret' });
    await t.admin.post('/api/workspace-variable/value', {
      variableId: wsId,
      theValue: 'ws-prod',
      environmentsFilter: [productionId],
    });
    const notImported = await wsVariable({ name: `Other${randomUUID().slice(0, 8)}` });
    await t.admin.post('/api/workspace-variable/value', { variableId: notImported, theValue: 'invisible' });
    await t.admin.post('/api/project/workspace-variable', { projectId, variableId: wsId });
    const own = (
      await t.admin.post('/api/project/variable', { projectId, name: name.toLowerCase(), variableType: 'Text' })
    ).body.variableId;
    await t.admin.post('/api/project/variable/value', {
      variableId: own,
      theValue: 'project-#{CONTEXT.EnvironmentName}',
    });

    const candidates = await loadVariableCandidates(t.deps, projectId);
    expect(candidates.map((c) => [c.value, c.source, c.sensitive]).sort()).toEqual(
      [
        ['project-#{CONTEXT.EnvironmentName}', 'Project', false],
        ['ws-prod', 'Workspace', true],
        ['ws-secret', 'Workspace', true],
      ].sort(),
    );
    const staging = resolveVariables(candidates, { environmentId: stagingId });
    expect(substituteVariables(`#{${name}}`, staging, { EnvironmentName: 'Staging' })).toBe('project-Staging');
    const production = resolveVariables(candidates, { environmentId: productionId });
    expect(production.get(name.toLowerCase())).toMatchObject({
      value: 'ws-prod',
      sensitive: true,
      source: 'Workspace',
    });
  });
});
