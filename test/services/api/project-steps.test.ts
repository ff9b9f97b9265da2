import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let templateId: string;
let stagingId: string;
let productionId: string;

let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function project(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/project', { workspaceId, name: unique('Project') });
  expect(created.status, created.text).toBe(200);
  return created.body.projectId;
}

async function template(workspaceId = t.mainWorkspaceId, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await t.admin.post('/api/step-template', {
    workspaceId,
    name: unique('Template'),
    script: 'echo hi',
    scriptLanguage: 'bash',
    ...extra,
  });
  expect(created.status, created.text).toBe(200);
  return created.body.stepTemplateId;
}

async function step(projectId: string, name = unique('Step'), stepTemplateId = templateId): Promise<string> {
  const created = await t.admin.post('/api/project/step', { projectId, name, stepTemplateId });
  expect(created.status, created.text).toBe(200);
  return created.body.projectStepId;
}

async function stepsOf(projectId: string) {
  const list = await t.admin.get('/api/project/steps', { projectId });
  expect(list.status, list.text).toBe(200);
  return list.body.steps as Array<Record<string, any>>;
}

/** Machines are created directly: this file tests steps, not machine registration. */
async function machine(workspaceId = t.mainWorkspaceId): Promise<string> {
  const id = randomUUID();
  await t.db('machines').insert({ id, workspace_id: workspaceId, name: unique('machine') });
  return id;
}

async function tag(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/tag', { workspaceId, name: unique('tag') });
  expect(created.status, created.text).toBe(200);
  return created.body.tagId;
}

beforeAll(async () => {
  t = await testApp();
  templateId = await template(t.mainWorkspaceId, { supportedRunModes: ['TargetMachine', 'Worker'] });
  const environments = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  stagingId = environments.body.environments.find((e: { name: string }) => e.name === 'Staging').environmentId;
  productionId = environments.body.environments.find((e: { name: string }) => e.name === 'Production').environmentId;
});

describe('POST /api/project/step', () => {
  it('appends steps at the end with default settings', async () => {
    const projectId = await project();
    const first = await step(projectId, 'Build');
    const second = await step(projectId, 'Deploy');
    const steps = await stepsOf(projectId);
    expect(steps.map((s) => [s.name, s.sortOrder])).toEqual([
      ['Build', 1],
      ['Deploy', 2],
    ]);
    expect(steps[1]).toEqual({
      projectStepId: second,
      name: 'Deploy',
      description: null,
      stepTemplateId: templateId,
      sortOrder: 2,
      runMode: null,
      errorAction: 'Stop',
      disabled: false,
      parallelMachines: null,
      environments: [],
      machineIdFilter: [],
      machineTagFilter: [],
      propertiesJson: '{}',
      rollingGroupId: null,
    });
    const rows = await t.db('project_steps').where({ project_id: projectId }).orderBy('sort_order');
    expect(rows.map((r) => r.id)).toEqual([first, second]);
  });

  it('answers 400 for an unknown, deleted or foreign projectId and stepTemplateId', async () => {
    const projectId = await project();
    const other = await t.workspace();
    const foreignTemplate = await template(other);
    const foreignProject = await project(other);
    const deletedTemplate = await template();
    await t.admin.delete('/api/step-template', { stepTemplateId: deletedTemplate });
    const deletedProject = await project();
    await t.admin.delete('/api/project', { projectId: deletedProject });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ projectId: 'nope', stepTemplateId: templateId }, 'projectId'],
      [{ projectId: deletedProject, stepTemplateId: templateId }, 'projectId'],
      [{ projectId: foreignProject, stepTemplateId: templateId }, 'stepTemplateId'],
      [{ projectId, stepTemplateId: 'nope' }, 'stepTemplateId'],
      [{ projectId, stepTemplateId: deletedTemplate }, 'stepTemplateId'],
      [{ projectId, stepTemplateId: foreignTemplate }, 'stepTemplateId'],
    ];
    for (const [body, property] of cases) {
      const response = await t.admin.post('/api/project/step', { name: 'X', ...body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property }] });
    }
    expect(await t.db('project_steps').where({ project_id: projectId })).toHaveLength(0);
  });

  it('takes the properties at once when given (a Gantry extension), refusing ones that are not a JSON object', async () => {
    const projectId = await project();
    const created = await t.admin.post('/api/project/step', {
      projectId,
      name: 'With properties',
      stepTemplateId: templateId,
      propertiesJson: '{"Greeting":"hello"}',
    });
    expect(created.status, created.text).toBe(200);
    expect((await stepsOf(projectId))[0]).toMatchObject({
      name: 'With properties',
      propertiesJson: '{"Greeting":"hello"}',
    });
    for (const propertiesJson of ['[1]', 'not json', '', 5]) {
      const refused = await t.admin.post('/api/project/step', {
        projectId,
        name: 'Refused',
        stepTemplateId: templateId,
        propertiesJson,
      });
      expect(refused.status, String(propertiesJson)).toBe(400);
      expect(refused.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'propertiesJson' }] });
    }
    expect(await stepsOf(projectId)).toHaveLength(1);
  });

  it('refuses a duplicate name in any case, a missing name and wrong types with 400', async () => {
    const projectId = await project();
    await step(projectId, 'Same');
    expect(
      (await t.admin.post('/api/project/step', { projectId, name: 'SAME', stepTemplateId: templateId })).status,
    ).toBe(400);
    expect((await t.admin.post('/api/project/step', { projectId, stepTemplateId: templateId })).status).toBe(400);
    expect((await t.admin.post('/api/project/step', { projectId, name: 'X', stepTemplateId: 5 })).status).toBe(400);
    expect(
      (await t.admin.post('/api/project/step', { projectId: [projectId], name: 'X', stepTemplateId: templateId }))
        .status,
    ).toBe(400);
    expect(await t.db('project_steps').where({ project_id: projectId })).toHaveLength(1);
  });

  it('keeps positions distinct when steps are appended concurrently', async () => {
    const projectId = await project();
    await Promise.all(Array.from({ length: 6 }, (_, i) => step(projectId, `Parallel ${i}`)));
    const steps = await stepsOf(projectId);
    expect(steps.map((s) => s.sortOrder)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});

describe('GET /api/project/steps', () => {
  it('answers 400 for a missing, unknown or deleted project', async () => {
    expect((await t.admin.get('/api/project/steps', {})).status).toBe(400);
    expect((await t.admin.get('/api/project/steps', { projectId: 'nope' })).status).toBe(400);
    const deleted = await project();
    await step(deleted);
    await t.admin.delete('/api/project', { projectId: deleted });
    const response = await t.admin.get('/api/project/steps', { projectId: deleted });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('projectId');
  });
});

describe('PUT /api/project/step', () => {
  it('changes only the fields sent', async () => {
    const projectId = await project();
    const id = await step(projectId, 'Configurable');
    const machineId = await machine();
    const tagA = await tag();
    const tagB = await tag();
    const all = {
      projectStepId: id,
      description: 'does things',
      runMode: 'Worker',
      errorAction: 'ContinueOnError',
      disabled: true,
      parallelMachines: 3,
      environments: [stagingId, productionId],
      machineIdFilter: [machineId],
      machineTagFilter: [{ tagIds: [tagA, tagB] }, { tagIds: [tagB] }],
      propertiesJson: '{"Package":"web","Folder":"/srv"}',
    };
    expect((await t.admin.put('/api/project/step', all)).status).toBe(200);
    const renamed = await t.admin.put('/api/project/step', { projectStepId: id, name: 'Renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.text).toBe('');
    const [stored] = await stepsOf(projectId);
    const { projectStepId: _, ...fields } = all;
    expect(stored).toMatchObject({ ...fields, name: 'Renamed', sortOrder: 1 });
    const [row] = await t.db('project_steps').where({ id });
    expect(row).toMatchObject({
      error_action: 'ContinueOnError',
      parallel_machines: 3,
      machine_tag_filter: all.machineTagFilter,
    });
  });

  it('clears nullable fields with null', async () => {
    const projectId = await project();
    const id = await step(projectId);
    await t.admin.put('/api/project/step', {
      projectStepId: id,
      description: 'x',
      runMode: 'TargetMachine',
      parallelMachines: 2,
    });
    expect(
      (
        await t.admin.put('/api/project/step', {
          projectStepId: id,
          description: null,
          runMode: null,
          parallelMachines: null,
        })
      ).status,
    ).toBe(200);
    const [stored] = await stepsOf(projectId);
    expect(stored).toMatchObject({ description: null, runMode: null, parallelMachines: null });
  });

  it('refuses references outside the workspace and invalid values with 400, changing nothing', async () => {
    const projectId = await project();
    const id = await step(projectId, 'Guarded');
    const other = await t.workspace();
    const foreignMachine = await machine(other);
    const foreignTag = await tag(other);
    const foreignEnvironment = (await t.admin.post('/api/environment', { workspaceId: other, name: 'Elsewhere' })).body
      .environmentId;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ environments: [stagingId, 'nope'] }, 'environments'],
      [{ environments: [foreignEnvironment] }, 'environments'],
      [{ machineIdFilter: [foreignMachine] }, 'machineIdFilter'],
      [{ machineIdFilter: ['nope'] }, 'machineIdFilter'],
      [{ machineTagFilter: [{ tagIds: [foreignTag] }] }, 'machineTagFilter'],
      [{ machineTagFilter: [{ tagIds: [] }] }, 'machineTagFilter.0.tagIds'],
      [{ propertiesJson: '[1,2]' }, 'propertiesJson'],
      [{ propertiesJson: 'not json' }, 'propertiesJson'],
      [{ propertiesJson: '"text"' }, 'propertiesJson'],
      [{ parallelMachines: 0 }, 'parallelMachines'],
      [{ parallelMachines: 1.5 }, 'parallelMachines'],
      [{ errorAction: 'Explode' }, 'errorAction'],
      [{ runMode: 'CentralServer' }, 'runMode'],
      [{ disabled: 'yes' }, 'disabled'],
    ];
    for (const [body, property] of cases) {
      const response = await t.admin.put('/api/project/step', { projectStepId: id, name: 'Changed', ...body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.validationErrors?.[0]?.property, JSON.stringify(body)).toBe(property);
    }
    const [row] = await t.db('project_steps').where({ id });
    expect(row).toMatchObject({
      name: 'Guarded',
      environment_ids: [],
      machine_id_filter: [],
      properties_json: '{}',
      error_action: 'Stop',
    });
  });

  it('refuses an unknown step, a foreign step and a duplicate name with 400', async () => {
    const projectId = await project();
    await step(projectId, 'Taken name');
    const id = await step(projectId);
    expect(
      (await t.admin.put('/api/project/step', { projectStepId: id, name: 'taken NAME' })).body.validationErrors,
    ).toEqual([{ property: 'name', messages: [expect.any(String)] }]);
    expect((await t.admin.put('/api/project/step', { projectStepId: 'nope', name: 'x' })).status).toBe(400);
    const other = await t.workspace();
    const foreignStep = await step(await project(other), 'Foreign', await template(other));
    const insider = await t.account([{ role: 'EditProject' }]);
    const response = await insider.put('/api/project/step', { projectStepId: foreignStep, name: 'Mine' });
    expect(response.status).toBe(400);
    expect((await t.db('project_steps').where({ id: foreignStep }))[0].name).toBe('Foreign');
  });
});

describe('DELETE /api/project/step', () => {
  it('removes the step and closes the gap in the order', async () => {
    const projectId = await project();
    const [a, b, c] = [await step(projectId, 'A'), await step(projectId, 'B'), await step(projectId, 'C')];
    expect((await t.admin.delete('/api/project/step', { projectStepId: b })).status).toBe(200);
    const steps = await stepsOf(projectId);
    expect(steps.map((s) => [s.projectStepId, s.sortOrder])).toEqual([
      [a, 1],
      [c, 2],
    ]);
    expect(await t.db('project_steps').where({ id: b })).toHaveLength(0);
    expect((await t.admin.delete('/api/project/step', { projectStepId: b })).status).toBe(400);
  });
});

describe('PUT /api/project/steps/order', () => {
  it('replaces the order', async () => {
    const projectId = await project();
    const [a, b, c] = [await step(projectId, 'A'), await step(projectId, 'B'), await step(projectId, 'C')];
    expect((await t.admin.put('/api/project/steps/order', { projectId, projectStepIds: [c, a, b] })).status).toBe(200);
    expect((await stepsOf(projectId)).map((s) => [s.name, s.sortOrder])).toEqual([
      ['C', 1],
      ['A', 2],
      ['B', 3],
    ]);
  });

  it("refuses anything but a permutation of exactly the project's steps, changing nothing", async () => {
    const projectId = await project();
    const [a, b] = [await step(projectId, 'A'), await step(projectId, 'B')];
    const stranger = await step(await project(), 'Elsewhere');
    for (const ids of [[a], [a, b, b], [a, b, stranger], [b, stranger], [], [a, b, 'nope']]) {
      const response = await t.admin.put('/api/project/steps/order', { projectId, projectStepIds: ids });
      expect(response.status, JSON.stringify(ids)).toBe(400);
      expect(response.body.validationErrors[0].property).toBe('projectStepIds');
    }
    expect((await stepsOf(projectId)).map((s) => s.projectStepId)).toEqual([a, b]);
    expect((await t.admin.put('/api/project/steps/order', { projectId: 'nope', projectStepIds: [a, b] })).status).toBe(
      400,
    );
  });
});

describe('POST /api/project/step/clone', () => {
  it('copies a step to the end of its project with a unique "- Copy" name', async () => {
    const projectId = await project();
    const source = await step(projectId, 'Deploy');
    await t.admin.put('/api/project/step', {
      projectStepId: source,
      description: 'd',
      environments: [stagingId],
      propertiesJson: '{"a":1}',
      parallelMachines: 2,
    });
    await step(projectId, 'Last');
    const first = await t.admin.post('/api/project/step/clone', { projectStepId: source });
    const second = await t.admin.post('/api/project/step/clone', { projectStepId: source });
    expect(first.status).toBe(200);
    const steps = await stepsOf(projectId);
    expect(steps.map((s) => [s.name, s.sortOrder])).toEqual([
      ['Deploy', 1],
      ['Last', 2],
      ['Deploy - Copy', 3],
      ['Deploy - Copy 2', 4],
    ]);
    expect(steps[2]).toMatchObject({
      projectStepId: first.body.projectStepId,
      description: 'd',
      environments: [stagingId],
      propertiesJson: '{"a":1}',
      parallelMachines: 2,
      stepTemplateId: templateId,
    });
    expect(steps[3]?.projectStepId).toBe(second.body.projectStepId);
  });

  it('copies into another project of the workspace under the given name', async () => {
    const source = await step(await project(), 'Original');
    const target = await project();
    await step(target, 'Existing');
    const cloned = await t.admin.post('/api/project/step/clone', {
      projectStepId: source,
      targetProjectId: target,
      name: 'Borrowed',
    });
    expect(cloned.status).toBe(200);
    expect((await stepsOf(target)).map((s) => [s.name, s.sortOrder])).toEqual([
      ['Existing', 1],
      ['Borrowed', 2],
    ]);
    const sameName = await t.admin.post('/api/project/step/clone', { projectStepId: source, targetProjectId: target });
    expect((await stepsOf(target)).at(-1)?.name).toBe('Original - Copy');
    expect(sameName.status).toBe(200);
  });

  it("refuses a taken name, an unknown step and another workspace's project with 400", async () => {
    const projectId = await project();
    const source = await step(projectId, 'Src');
    expect((await t.admin.post('/api/project/step/clone', { projectStepId: source, name: 'src' })).status).toBe(400);
    expect((await t.admin.post('/api/project/step/clone', { projectStepId: 'nope' })).status).toBe(400);
    const foreign = await project(await t.workspace());
    const response = await t.admin.post('/api/project/step/clone', { projectStepId: source, targetProjectId: foreign });
    expect(response.status).toBe(400);
    expect(response.body.validationErrors[0].property).toBe('targetProjectId');
    expect(await t.db('project_steps').where({ project_id: foreign })).toHaveLength(0);
    expect(await t.db('project_steps').where({ project_id: projectId })).toHaveLength(1);
  });
});

describe('step templates in use', () => {
  it('refuses deleting a template that steps use, naming them, until the steps are gone', async () => {
    const used = await template();
    const projectId = await project();
    const id = await step(projectId, 'User step', used);
    const refused = await t.admin.delete('/api/step-template', { stepTemplateId: used });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('User step');
    expect((await t.db('step_templates').where({ id: used }))[0].deleted_at).toBeNull();
    await t.admin.delete('/api/project/step', { projectStepId: id });
    expect((await t.admin.delete('/api/step-template', { stepTemplateId: used })).status).toBe(200);
  });

  it('refuses dropping a run mode that a step is set to', async () => {
    const modal = await template(t.mainWorkspaceId, { supportedRunModes: ['TargetMachine', 'Worker'] });
    const id = await step(await project(), 'Worker step', modal);
    await t.admin.put('/api/project/step', { projectStepId: id, runMode: 'Worker' });
    const refused = await t.admin.put('/api/step-template', {
      stepTemplateId: modal,
      supportedRunModes: ['TargetMachine'],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.validationErrors[0].property).toBe('supportedRunModes');
    expect(
      (await t.admin.put('/api/step-template', { stepTemplateId: modal, supportedRunModes: ['Worker'] })).status,
    ).toBe(200);
  });
});

describe('project step permissions', () => {
  it('needs EditProject on the project for writes and View for reads (401/2003)', async () => {
    const projectId = await project();
    const otherProject = await project();
    const id = await step(projectId);
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/project/steps', { projectId })).status).toBe(200);
    const scoped = await t.account([{ role: 'EditProject', projectIds: [otherProject] }, { role: 'View' }]);
    for (const client of [viewer, scoped]) {
      for (const response of [
        await client.post('/api/project/step', { projectId, name: 'X', stepTemplateId: templateId }),
        await client.put('/api/project/step', { projectStepId: id, name: 'X' }),
        await client.delete('/api/project/step', { projectStepId: id }),
        await client.put('/api/project/steps/order', { projectId, projectStepIds: [id] }),
        await client.post('/api/project/step/clone', { projectStepId: id }),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
      }
    }
    // Scoped to the other project, the account may copy this step there.
    expect(
      (await scoped.post('/api/project/step/clone', { projectStepId: id, targetProjectId: otherProject })).status,
    ).toBe(200);
    expect(await t.db('project_steps').where({ project_id: projectId })).toHaveLength(1);
    const editorOnly = await t.account([{ role: 'EditProject' }]);
    expect((await editorOnly.get('/api/project/steps', { projectId })).body.errorcode).toBe(2003);
  });
});
