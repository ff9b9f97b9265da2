import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let env: Record<string, string>;
let counter = 0;

async function environment(name: string, workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/environment', { workspaceId, name });
  if (created.status !== 200) throw new Error(created.text);
  return created.body.environmentId as string;
}

/** A lifecycle with phases Dev [A, B] → Test [C] on fresh environments. */
async function sampleLifecycle(): Promise<{ lifecycleId: string; a: string; b: string; c: string; d: string }> {
  const n = ++counter;
  const [a, b, c, d] = await Promise.all(['A', 'B', 'C', 'D'].map((x) => environment(`${x}-${n}`)));
  const created = await t.admin.post('/api/lifecycle', {
    workspaceId: t.mainWorkspaceId,
    name: `Sample ${n}`,
    phases: [
      { name: 'Dev', environments: [{ environmentId: a }, { environmentId: b, howToTrigger: 'Automatic' }] },
      { name: 'Test', environments: [{ environmentId: c }] },
    ],
  });
  if (created.status !== 200) throw new Error(created.text);
  return { lifecycleId: created.body.lifecycleId as string, a: a!, b: b!, c: c!, d: d! };
}

async function details(lifecycleId: string) {
  const response = await t.admin.get('/api/lifecycle/details', { lifecycleId });
  expect(response.status).toBe(200);
  return response.body;
}

async function phaseIds(lifecycleId: string): Promise<string[]> {
  return (await details(lifecycleId)).phases.map((p: { phaseId: string }) => p.phaseId);
}

beforeAll(async () => {
  t = await testApp();
  const list = await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId });
  env = Object.fromEntries(
    list.body.environments.map((e: { name: string; environmentId: string }) => [e.name, e.environmentId]),
  );
});

describe('POST /api/lifecycle', () => {
  it('creates a lifecycle whose details show the spec §2.4 shape with defaults filled in', async () => {
    const qa = await environment('QA');
    const created = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'Standard',
      description: 'two steps',
      phases: [
        {
          name: 'Testing',
          environments: [{ environmentId: qa, howToTrigger: 'Automatic' }, { environmentId: env.Staging }],
        },
        {
          name: 'Live',
          description: 'careful',
          progressRequirement: 'MinimumNumberToComplete',
          progressRequirementCount: 1,
          progressRequirementErrorMode: 'NoErrorsNoWarnings',
          environments: [{ environmentId: env.Production, howToTrigger: 'Manual' }],
        },
      ],
    });
    expect(created.status).toBe(200);
    const lifecycleId = created.body.lifecycleId;
    const body = await details(lifecycleId);
    const [testing, live] = body.phases;
    expect(body).toEqual({
      lifecycleId,
      workspaceId: t.mainWorkspaceId,
      name: 'Standard',
      description: 'two steps',
      phases: [
        {
          phaseId: testing.phaseId,
          name: 'Testing',
          description: null,
          sortOrder: 1,
          progressRequirement: 'AllMustComplete',
          progressRequirementErrorMode: 'NoErrorsAllowWarnings',
          progressRequirementCount: 0,
          environments: [
            { environmentId: env.Staging, environmentName: 'Staging', howToTrigger: 'Manual' },
            { environmentId: qa, environmentName: 'QA', howToTrigger: 'Automatic' },
          ],
        },
        {
          phaseId: live.phaseId,
          name: 'Live',
          description: 'careful',
          sortOrder: 2,
          progressRequirement: 'MinimumNumberToComplete',
          progressRequirementErrorMode: 'NoErrorsNoWarnings',
          progressRequirementCount: 1,
          environments: [{ environmentId: env.Production, environmentName: 'Production', howToTrigger: 'Manual' }],
        },
      ],
    });
    const stored = await t.db('lifecycle_phases').where({ lifecycle_id: lifecycleId }).orderBy('sort_order');
    expect(stored.map((p) => [p.name, p.sort_order])).toEqual([
      ['Testing', 1],
      ['Live', 2],
    ]);
    expect(await t.db('phase_environments').where({ phase_id: testing.phaseId })).toHaveLength(2);
  });

  it('creates a lifecycle without phases', async () => {
    const created = await t.admin.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 'Empty' });
    expect(created.status).toBe(200);
    expect(await details(created.body.lifecycleId)).toMatchObject({ name: 'Empty', description: null, phases: [] });
  });

  it('stores a count of 0 when the requirement does not count environments', async () => {
    const created = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'Normalized',
      phases: [{ name: 'P', progressRequirement: 'OptionalPhase', progressRequirementCount: 3, environments: [] }],
    });
    expect(created.status).toBe(200);
    expect((await details(created.body.lifecycleId)).phases[0]).toMatchObject({
      progressRequirement: 'OptionalPhase',
      progressRequirementCount: 0,
    });
  });

  it('refuses a MinimumNumberToComplete count outside 1..environments with validationErrors', async () => {
    for (const count of [0, 2]) {
      const response = await t.admin.post('/api/lifecycle', {
        workspaceId: t.mainWorkspaceId,
        name: `Bad count ${count}`,
        phases: [
          {
            name: 'P',
            progressRequirement: 'MinimumNumberToComplete',
            progressRequirementCount: count,
            environments: [{ environmentId: env.Staging }],
          },
        ],
      });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        errorcode: 3001,
        validationErrors: [{ property: 'phases[0].progressRequirementCount' }],
      });
    }
    expect(await t.db('lifecycles').whereILike('name', 'Bad count%')).toHaveLength(0);
  });

  it('refuses an environment twice in one lifecycle and duplicate phase names', async () => {
    const twice = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'Twice',
      phases: [
        { name: 'One', environments: [{ environmentId: env.Staging }] },
        { name: 'Two', environments: [{ environmentId: env.Staging }] },
      ],
    });
    expect(twice.status).toBe(400);
    expect(twice.body.validationErrors).toEqual([
      { property: 'phases[1].environments', messages: [expect.stringContaining('at most once')] },
    ]);
    const sameName = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'Names',
      phases: [{ name: 'X' }, { name: 'x' }],
    });
    expect(sameName.status).toBe(400);
    expect(sameName.body.validationErrors[0].property).toBe('phases[1].name');
    expect(await t.db('lifecycles').whereIn('name', ['Twice', 'Names'])).toHaveLength(0);
  });

  it('refuses environments that are unknown, deleted or in another workspace', async () => {
    const other = await t.workspace();
    const foreign = await environment('Foreign', other);
    const deleted = await environment('Gone');
    await t.admin.delete('/api/environment', { environmentId: deleted });
    for (const environmentId of ['nope', foreign, deleted]) {
      const response = await t.admin.post('/api/lifecycle', {
        workspaceId: t.mainWorkspaceId,
        name: 'Refs',
        phases: [{ name: 'P', environments: [{ environmentId }] }],
      });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        errorcode: 3001,
        validationErrors: [{ property: 'phases[0].environments' }],
      });
    }
    expect(await t.db('lifecycles').where({ name: 'Refs' })).toHaveLength(0);
  });

  it('refuses an unknown workspace, a duplicate name, wrong types and bad enum values', async () => {
    expect((await t.admin.post('/api/lifecycle', { workspaceId: 'nope', name: 'X' })).status).toBe(400);
    const duplicate = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'default lifecycle',
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors[0].property).toBe('name');
    expect((await t.admin.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 7 })).status).toBe(400);
    expect(
      (await t.admin.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 'X', phases: 'P' })).status,
    ).toBe(400);
    const badEnum = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'X',
      phases: [{ name: 'P', progressRequirement: 'Sometimes' }],
    });
    expect(badEnum.status).toBe(400);
    const badTrigger = await t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: 'X',
      phases: [{ name: 'P', environments: [{ environmentId: env.Staging, howToTrigger: 'Never' }] }],
    });
    expect(badTrigger.status).toBe(400);
    expect(
      (await t.admin.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 'x'.repeat(201) })).status,
    ).toBe(400);
    expect(await t.db('lifecycles').where({ name: 'X' })).toHaveLength(0);
  });
});

describe('GET /api/lifecycle and /api/lifecycle/details', () => {
  it('lists lifecycles with their phases, paged, for a View account', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const all = await viewer.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId });
    expect(all.status).toBe(200);
    const seeded = all.body.lifecycles.find((l: { name: string }) => l.name === 'Default Lifecycle');
    expect(
      seeded.phases.map((p: { name: string; environments: Array<{ environmentName: string }> }) => [
        p.name,
        p.environments.map((e) => e.environmentName),
      ]),
    ).toEqual([
      ['Staging', ['Staging']],
      ['Production', ['Production']],
    ]);
    const page = await viewer.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId, skip: 1, take: 1 });
    expect(page.body.lifecycles).toHaveLength(1);
    expect(page.body.totalCount).toBe(all.body.totalCount);
    expect(page.body.lifecycles[0].lifecycleId).toBe(all.body.lifecycles[1].lifecycleId);
  });

  it('answers 400 for a missing, unknown or foreign lifecycleId', async () => {
    expect((await t.admin.get('/api/lifecycle/details')).status).toBe(400);
    expect((await t.admin.get('/api/lifecycle/details', { lifecycleId: 'nope' })).body).toMatchObject({
      errorcode: 3001,
      error: expect.stringContaining('lifecycleId'),
    });
    const other = await t.workspace();
    const foreign = await t.admin.post('/api/lifecycle', { workspaceId: other, name: 'Theirs' });
    const outsider = await t.account([{ role: 'ManageWorkspace' }, { role: 'View' }], other);
    const ours = (await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId })).body.lifecycles[0]
      .lifecycleId;
    expect((await outsider.get('/api/lifecycle/details', { lifecycleId: ours })).status).toBe(400);
    expect((await outsider.get('/api/lifecycle/details', { lifecycleId: foreign.body.lifecycleId })).status).toBe(200);
    expect((await outsider.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId })).status).toBe(400);
  });

  it('hides environments once they are deleted', async () => {
    const { lifecycleId, b } = await sampleLifecycle();
    await t.admin.delete('/api/environment', { environmentId: b });
    const body = await details(lifecycleId);
    expect(body.phases[0].environments.map((e: { environmentId: string }) => e.environmentId)).not.toContain(b);
    expect(body.phases[0].environments).toHaveLength(1);
  });
});

describe('lifecycle permissions', () => {
  it('refuses details and every write to an account without ManageWorkspace', async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const { lifecycleId, a } = await sampleLifecycle();
    const phaseId = (await phaseIds(lifecycleId))[0];
    const calls = [
      viewer.get('/api/lifecycle/details', { lifecycleId }),
      viewer.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 'No' }),
      viewer.put('/api/lifecycle', { lifecycleId, name: 'No' }),
      viewer.delete('/api/lifecycle', { lifecycleId }),
      viewer.post('/api/lifecycle/phase', { lifecycleId, name: 'No' }),
      viewer.put('/api/lifecycle/phase', { phaseId, name: 'No' }),
      viewer.delete('/api/lifecycle/phase', { phaseId }),
      viewer.put('/api/lifecycle/phase/environment', { phaseId, environmentId: a, howToTrigger: 'Automatic' }),
      viewer.delete('/api/lifecycle/phase/environment', { phaseId, environmentId: a }),
    ];
    for (const response of await Promise.all(calls)) {
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('ManageWorkspace') });
    }
    expect((await details(lifecycleId)).phases).toHaveLength(2);
  });

  it('refuses to attach an environment outside an environment-limited role', async () => {
    const { lifecycleId, a, d } = await sampleLifecycle();
    const limited = await t.account([{ role: 'ManageWorkspace', environmentIds: [a] }]);
    const phaseId = (await phaseIds(lifecycleId))[1]!;
    const refused = await limited.put('/api/lifecycle/phase/environment', { phaseId, environmentId: d });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toContain(d);
    expect(await t.db('phase_environments').where({ phase_id: phaseId, environment_id: d })).toHaveLength(0);
  });
});

describe('PUT /api/lifecycle', () => {
  it('changes only the fields sent and keeps the phases when none are sent', async () => {
    const { lifecycleId } = await sampleLifecycle();
    const before = await details(lifecycleId);
    expect((await t.admin.put('/api/lifecycle', { lifecycleId, description: 'new' })).status).toBe(200);
    expect(await details(lifecycleId)).toEqual({ ...before, description: 'new' });
  });

  it('replaces the phase list, keeping IDs of phases sent with their phaseId', async () => {
    const { lifecycleId, a, c, d } = await sampleLifecycle();
    const [dev, test] = await phaseIds(lifecycleId);
    const response = await t.admin.put('/api/lifecycle', {
      lifecycleId,
      name: 'Reshaped',
      phases: [
        { phaseId: test, name: 'Test', environments: [{ environmentId: c }, { environmentId: a }] },
        { name: 'Prod', environments: [{ environmentId: d, howToTrigger: 'Automatic' }] },
      ],
    });
    expect(response.status).toBe(200);
    const body = await details(lifecycleId);
    expect(body.name).toBe('Reshaped');
    expect(body.phases.map((p: { name: string; sortOrder: number }) => [p.name, p.sortOrder])).toEqual([
      ['Test', 1],
      ['Prod', 2],
    ]);
    expect(body.phases[0].phaseId).toBe(test);
    expect(await t.db('lifecycle_phases').where({ id: dev })).toHaveLength(0);
    expect(body.phases[1].environments).toEqual([
      { environmentId: d, environmentName: expect.any(String), howToTrigger: 'Automatic' },
    ]);
  });

  it('refuses a phaseId of another lifecycle and leaves the phases unchanged', async () => {
    const first = await sampleLifecycle();
    const second = await sampleLifecycle();
    const foreignPhase = (await phaseIds(second.lifecycleId))[0];
    const before = await details(first.lifecycleId);
    const response = await t.admin.put('/api/lifecycle', {
      lifecycleId: first.lifecycleId,
      phases: [{ phaseId: foreignPhase, name: 'Stolen' }],
    });
    expect(response.status).toBe(400);
    expect(response.body.validationErrors[0].property).toBe('phases[0].phaseId');
    expect(await details(first.lifecycleId)).toEqual(before);
  });

  it('refuses an unknown lifecycle and a duplicate name', async () => {
    expect((await t.admin.put('/api/lifecycle', { lifecycleId: 'nope', name: 'X' })).status).toBe(400);
    const { lifecycleId } = await sampleLifecycle();
    const response = await t.admin.put('/api/lifecycle', { lifecycleId, name: 'Default Lifecycle' });
    expect(response.status).toBe(400);
    expect(response.body.validationErrors[0].property).toBe('name');
  });
});

describe('DELETE /api/lifecycle', () => {
  it('deletes a lifecycle with its phases and their environments', async () => {
    const { lifecycleId } = await sampleLifecycle();
    const ids = await phaseIds(lifecycleId);
    expect((await t.admin.delete('/api/lifecycle', { lifecycleId })).status).toBe(200);
    expect(await t.db('lifecycles').where({ id: lifecycleId })).toHaveLength(0);
    expect(await t.db('phase_environments').whereIn('phase_id', ids)).toHaveLength(0);
    expect((await t.admin.get('/api/lifecycle/details', { lifecycleId })).status).toBe(400);
    expect((await t.admin.delete('/api/lifecycle', { lifecycleId })).status).toBe(400);
  });

  it('refuses while a live project or a channel uses it, and allows it once the project is deleted', async () => {
    const { lifecycleId } = await sampleLifecycle();
    const project = await t.admin.post('/api/project', {
      workspaceId: t.mainWorkspaceId,
      name: `Uses lifecycle ${counter}`,
      lifecycleId,
    });
    const refused = await t.admin.delete('/api/lifecycle', { lifecycleId });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain(`project 'Uses lifecycle ${counter}'`);

    const other = await t.admin.post('/api/project', {
      workspaceId: t.mainWorkspaceId,
      name: `Channel owner ${counter}`,
    });
    await t
      .db('channels')
      .insert({ id: `ch-${counter}`, project_id: other.body.projectId, name: 'Beta', lifecycle_id: lifecycleId });
    await t.admin.delete('/api/project', { projectId: project.body.projectId });
    const byChannel = await t.admin.delete('/api/lifecycle', { lifecycleId });
    expect(byChannel.status).toBe(400);
    expect(byChannel.body.error).toContain("channel '");

    await t.admin.delete('/api/project', { projectId: other.body.projectId });
    expect((await t.admin.delete('/api/lifecycle', { lifecycleId })).status).toBe(200);
    const [deletedProject] = await t.db('projects').where({ id: project.body.projectId });
    expect(deletedProject.lifecycle_id).toBeNull();
  });
});

describe('POST /api/lifecycle/phase', () => {
  it('appends a phase after the last one', async () => {
    const { lifecycleId, d } = await sampleLifecycle();
    const created = await t.admin.post('/api/lifecycle/phase', {
      lifecycleId,
      name: 'Prod',
      progressRequirement: 'MinimumNumberToComplete',
      progressRequirementCount: 1,
      environments: [{ environmentId: d, howToTrigger: 'Automatic' }],
    });
    expect(created.status).toBe(200);
    const body = await details(lifecycleId);
    expect(body.phases[2]).toMatchObject({
      phaseId: created.body.phaseId,
      name: 'Prod',
      sortOrder: 3,
      progressRequirementCount: 1,
      environments: [{ environmentId: d, howToTrigger: 'Automatic' }],
    });
  });

  it('refuses a duplicate phase name, an environment already in the lifecycle and an unknown lifecycle', async () => {
    const { lifecycleId, a } = await sampleLifecycle();
    const name = await t.admin.post('/api/lifecycle/phase', { lifecycleId, name: 'dev' });
    expect(name.status).toBe(400);
    expect(name.body.validationErrors[0].property).toBe('name');
    const twice = await t.admin.post('/api/lifecycle/phase', {
      lifecycleId,
      name: 'Again',
      environments: [{ environmentId: a }],
    });
    expect(twice.status).toBe(400);
    expect(twice.body.validationErrors[0].property).toBe('environments');
    expect((await t.admin.post('/api/lifecycle/phase', { lifecycleId: 'nope', name: 'X' })).status).toBe(400);
    expect((await details(lifecycleId)).phases).toHaveLength(2);
  });
});

describe('PUT /api/lifecycle/phase', () => {
  it('changes only the fields sent', async () => {
    const { lifecycleId } = await sampleLifecycle();
    const before = (await details(lifecycleId)).phases[0];
    expect(
      (
        await t.admin.put('/api/lifecycle/phase', {
          phaseId: before.phaseId,
          description: 'first',
          progressRequirementErrorMode: 'NoErrorsNoWarnings',
        })
      ).status,
    ).toBe(200);
    expect((await details(lifecycleId)).phases[0]).toEqual({
      ...before,
      description: 'first',
      progressRequirementErrorMode: 'NoErrorsNoWarnings',
    });
  });

  it('moves a phase and keeps sortOrder contiguous', async () => {
    const { lifecycleId } = await sampleLifecycle();
    const third = await t.admin.post('/api/lifecycle/phase', { lifecycleId, name: 'Prod' });
    expect((await t.admin.put('/api/lifecycle/phase', { phaseId: third.body.phaseId, sortOrder: 1 })).status).toBe(200);
    const body = await details(lifecycleId);
    expect(body.phases.map((p: { name: string; sortOrder: number }) => [p.name, p.sortOrder])).toEqual([
      ['Prod', 1],
      ['Dev', 2],
      ['Test', 3],
    ]);
    const stored = await t.db('lifecycle_phases').where({ lifecycle_id: lifecycleId }).orderBy('sort_order');
    expect(stored.map((p) => p.sort_order)).toEqual([1, 2, 3]);
    const outOfRange = await t.admin.put('/api/lifecycle/phase', { phaseId: third.body.phaseId, sortOrder: 4 });
    expect(outOfRange.status).toBe(400);
    expect(outOfRange.body.validationErrors[0].property).toBe('sortOrder');
  });

  it('replaces the environments and checks the count against them', async () => {
    const { lifecycleId, c, d } = await sampleLifecycle();
    const phaseId = (await phaseIds(lifecycleId))[0]!;
    const switched = await t.admin.put('/api/lifecycle/phase', {
      phaseId,
      progressRequirement: 'MinimumNumberToComplete',
    });
    expect(switched.status).toBe(400);
    expect(switched.body.validationErrors[0].property).toBe('progressRequirementCount');
    const ok = await t.admin.put('/api/lifecycle/phase', {
      phaseId,
      progressRequirement: 'MinimumNumberToComplete',
      progressRequirementCount: 1,
      environments: [{ environmentId: d }],
    });
    expect(ok.status).toBe(200);
    expect((await details(lifecycleId)).phases[0]).toMatchObject({
      progressRequirementCount: 1,
      environments: [{ environmentId: d, howToTrigger: 'Manual' }],
    });
    const taken = await t.admin.put('/api/lifecycle/phase', { phaseId, environments: [{ environmentId: c }] });
    expect(taken.status).toBe(400);
    expect((await t.admin.put('/api/lifecycle/phase', { phaseId: 'nope', name: 'X' })).status).toBe(400);
    expect((await t.admin.put('/api/lifecycle/phase', { phaseId, sortOrder: 'first' })).status).toBe(400);
  });
});

describe('DELETE /api/lifecycle/phase', () => {
  it('removes the phase and renumbers the rest', async () => {
    const { lifecycleId } = await sampleLifecycle();
    await t.admin.post('/api/lifecycle/phase', { lifecycleId, name: 'Prod' });
    const [dev] = await phaseIds(lifecycleId);
    expect((await t.admin.delete('/api/lifecycle/phase', { phaseId: dev })).status).toBe(200);
    const stored = await t.db('lifecycle_phases').where({ lifecycle_id: lifecycleId }).orderBy('sort_order');
    expect(stored.map((p) => [p.name, p.sort_order])).toEqual([
      ['Test', 1],
      ['Prod', 2],
    ]);
    expect(await t.db('phase_environments').where({ phase_id: dev })).toHaveLength(0);
    expect((await t.admin.delete('/api/lifecycle/phase', { phaseId: dev })).status).toBe(400);
  });
});

describe('/api/lifecycle/phase/environment', () => {
  it('attaches an environment, then changes its trigger', async () => {
    const { lifecycleId, d } = await sampleLifecycle();
    const phaseId = (await phaseIds(lifecycleId))[1]!;
    expect((await t.admin.put('/api/lifecycle/phase/environment', { phaseId, environmentId: d })).status).toBe(200);
    let row = await t.db('phase_environments').where({ phase_id: phaseId, environment_id: d }).first();
    expect(row.how_to_trigger).toBe('Manual');
    expect(
      (await t.admin.put('/api/lifecycle/phase/environment', { phaseId, environmentId: d, howToTrigger: 'Automatic' }))
        .status,
    ).toBe(200);
    row = await t.db('phase_environments').where({ phase_id: phaseId, environment_id: d }).first();
    expect(row.how_to_trigger).toBe('Automatic');
    expect((await details(lifecycleId)).phases[1].environments).toHaveLength(2);
  });

  it('refuses an environment already in another phase, or unknown, or foreign', async () => {
    const { lifecycleId, a } = await sampleLifecycle();
    const phaseId = (await phaseIds(lifecycleId))[1]!;
    const taken = await t.admin.put('/api/lifecycle/phase/environment', { phaseId, environmentId: a });
    expect(taken.status).toBe(400);
    expect(taken.body.validationErrors[0].property).toBe('environmentId');
    expect((await t.admin.put('/api/lifecycle/phase/environment', { phaseId, environmentId: 'nope' })).status).toBe(
      400,
    );
    const foreign = await environment('Far away', await t.workspace());
    expect((await t.admin.put('/api/lifecycle/phase/environment', { phaseId, environmentId: foreign })).status).toBe(
      400,
    );
    expect((await t.admin.put('/api/lifecycle/phase/environment', { phaseId: 'nope', environmentId: a })).status).toBe(
      400,
    );
    expect(await t.db('phase_environments').where({ phase_id: phaseId })).toHaveLength(1);
  });

  it('detaches an environment, refusing one that is not in the phase or would break the count', async () => {
    const { lifecycleId, a, b, c } = await sampleLifecycle();
    const [dev, test] = await phaseIds(lifecycleId);
    expect((await t.admin.delete('/api/lifecycle/phase/environment', { phaseId: dev, environmentId: a })).status).toBe(
      200,
    );
    expect(await t.db('phase_environments').where({ phase_id: dev }).pluck('environment_id')).toEqual([b]);
    const absent = await t.admin.delete('/api/lifecycle/phase/environment', { phaseId: dev, environmentId: c });
    expect(absent.status).toBe(400);
    expect(absent.body.validationErrors[0].property).toBe('environmentId');
    await t.admin.put('/api/lifecycle/phase', {
      phaseId: test,
      progressRequirement: 'MinimumNumberToComplete',
      progressRequirementCount: 1,
    });
    const breaks = await t.admin.delete('/api/lifecycle/phase/environment', { phaseId: test, environmentId: c });
    expect(breaks.status).toBe(400);
    expect(breaks.body.validationErrors[0].property).toBe('progressRequirementCount');
    expect(await t.db('phase_environments').where({ phase_id: test })).toHaveLength(1);
  });
});
