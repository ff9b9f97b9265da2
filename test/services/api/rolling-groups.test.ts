import { beforeAll, describe, expect, it } from 'vitest';
import { testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let templateId: string;
let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function project(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/project', { workspaceId, name: unique('Project') });
  expect(created.status, created.text).toBe(200);
  return created.body.projectId;
}

/** A project with `count` steps named A, B, C…; returns the project and step IDs in order. */
async function projectWithSteps(count: number): Promise<{ projectId: string; ids: string[] }> {
  const projectId = await project();
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await t.admin.post('/api/project/step', {
      projectId,
      name: String.fromCharCode(65 + i),
      stepTemplateId: templateId,
    });
    expect(created.status, created.text).toBe(200);
    ids.push(created.body.projectStepId);
  }
  return { projectId, ids };
}

async function group(projectId: string, memberStepIds: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const created = await t.admin.post('/api/project/rolling-group', {
    projectId,
    name: unique('Group'),
    memberStepIds,
    ...extra,
  });
  expect(created.status, created.text).toBe(200);
  return created.body.rollingGroupId;
}

async function groupsOf(projectId: string) {
  const list = await t.admin.get('/api/project/rolling-groups', { projectId });
  expect(list.status, list.text).toBe(200);
  return list.body.rollingGroups as Array<Record<string, any>>;
}

async function membershipOf(projectId: string): Promise<Array<string | null>> {
  const rows = await t.db('project_steps').where({ project_id: projectId }).orderBy('sort_order');
  return rows.map((r) => r.rolling_group_id);
}

async function tag(workspaceId = t.mainWorkspaceId): Promise<string> {
  const created = await t.admin.post('/api/tag', { workspaceId, name: unique('tag') });
  return created.body.tagId;
}

beforeAll(async () => {
  t = await testApp();
  const created = await t.admin.post('/api/step-template', {
    workspaceId: t.mainWorkspaceId,
    name: 'Script',
    script: 'echo',
    scriptLanguage: 'bash',
  });
  templateId = created.body.stepTemplateId;
});

describe('POST /api/project/rolling-group', () => {
  it('groups consecutive steps with the spec defaults, and the steps carry the group', async () => {
    const { projectId, ids } = await projectWithSteps(4);
    const created = await t.admin.post('/api/project/rolling-group', {
      projectId,
      name: 'Web tier',
      memberStepIds: [ids[2], ids[1]],
    });
    expect(created.status).toBe(200);
    const id = created.body.rollingGroupId;
    expect(await groupsOf(projectId)).toEqual([
      {
        rollingGroupId: id,
        projectId,
        name: 'Web tier',
        order: 2,
        windowSize: 1,
        machineOrder: 'MachineName',
        machineOrderTagIds: [],
        waitBetweenMachineGroups: false,
        onMachineFailure: 'StopStep',
        onMemberFailure: 'SkipRestOnThisMachine',
        onNoTargets: 'Skip',
        memberStepIds: [ids[1], ids[2]],
      },
    ]);
    expect(await membershipOf(projectId)).toEqual([null, id, id, null]);
    const steps = await t.admin.get('/api/project/steps', { projectId });
    expect(steps.body.steps.map((s: { rollingGroupId: string | null }) => s.rollingGroupId)).toEqual([
      null,
      id,
      id,
      null,
    ]);
  });

  it('stores every setting given', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    const [web, db] = [await tag(), await tag()];
    const id = await group(projectId, ids, {
      windowSize: 8,
      machineOrder: 'TagPriority',
      machineOrderTagIds: [db, web],
      waitBetweenMachineGroups: true,
      onMachineFailure: 'ContinueToOtherMachines',
      onMemberFailure: 'ContinueMembers',
      onNoTargets: 'Fail',
    });
    const [row] = await t.db('rolling_groups').where({ id });
    expect(row).toMatchObject({
      window_size: 8,
      machine_order: 'TagPriority',
      machine_order_tag_ids: [db, web],
      wait_between_machine_groups: true,
      on_machine_failure: 'ContinueToOtherMachines',
      on_member_failure: 'ContinueMembers',
      on_no_targets: 'Fail',
    });
    expect((await groupsOf(projectId))[0]).toMatchObject({
      order: 1,
      windowSize: 8,
      machineOrderTagIds: [db, web],
      memberStepIds: ids,
    });
  });

  it('never accepts order, in any spelling, and stores nothing', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    for (const body of [{ order: 1 }, { Order: 2 }, { order: null }]) {
      const response = await t.admin.post('/api/project/rolling-group', {
        projectId,
        name: 'Ordered',
        memberStepIds: ids,
        ...body,
      });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.validationErrors).toEqual([
        { property: 'order', messages: [expect.stringContaining('derived')] },
      ]);
    }
    expect(await t.db('rolling_groups').where({ project_id: projectId })).toHaveLength(0);
    expect(await membershipOf(projectId)).toEqual([null, null]);
  });

  it('refuses members that are empty, repeated, foreign, taken or not consecutive', async () => {
    const { projectId, ids } = await projectWithSteps(4);
    const taken = await group(projectId, [ids[3]!]);
    const other = await projectWithSteps(1);
    const cases: string[][] = [
      [],
      [ids[0]!, ids[0]!],
      [ids[0]!, other.ids[0]!],
      ['nope'],
      [ids[2]!, ids[3]!],
      [ids[0]!, ids[2]!],
    ];
    for (const memberStepIds of cases) {
      const response = await t.admin.post('/api/project/rolling-group', { projectId, name: 'Bad', memberStepIds });
      expect(response.status, JSON.stringify(memberStepIds)).toBe(400);
      expect(response.body.validationErrors.map((e: { property: string }) => e.property)).toEqual(['memberStepIds']);
    }
    expect(await membershipOf(projectId)).toEqual([null, null, null, taken]);
    expect(await t.db('rolling_groups').where({ project_id: projectId })).toHaveLength(1);
    expect((await t.admin.post('/api/project/rolling-group', { projectId, name: 'X' })).status).toBe(400);
  });

  it('refuses settings that break the rules of spec §2.5, reporting each property', async () => {
    const { projectId, ids } = await projectWithSteps(1);
    const foreignTag = await tag(await t.workspace());
    const own = await tag();
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ windowSize: 0 }, ['windowSize']],
      [{ windowSize: 9 }, ['windowSize']],
      [{ windowSize: 'two' }, ['windowSize']],
      [{ machineOrder: 'Random' }, ['machineOrder']],
      [{ machineOrderTagIds: [own] }, ['machineOrderTagIds']],
      [{ machineOrder: 'TagPriority' }, ['machineOrderTagIds']],
      [{ machineOrder: 'TagPriority', machineOrderTagIds: [foreignTag] }, ['machineOrderTagIds']],
      [{ machineOrder: 'TagPriority', machineOrderTagIds: ['nope'] }, ['machineOrderTagIds']],
      [{ waitBetweenMachineGroups: true }, ['waitBetweenMachineGroups']],
      [{ onMachineFailure: 'Panic' }, ['onMachineFailure']],
      [{ onMemberFailure: 'Panic' }, ['onMemberFailure']],
      [{ onNoTargets: 'Panic' }, ['onNoTargets']],
      [
        { windowSize: 100, onNoTargets: 'Panic', waitBetweenMachineGroups: true },
        ['windowSize', 'waitBetweenMachineGroups', 'onNoTargets'],
      ],
      [{ name: '' }, ['name']],
    ];
    for (const [extra, expected] of cases) {
      const response = await t.admin.post('/api/project/rolling-group', {
        projectId,
        name: 'Rules',
        memberStepIds: ids,
        ...extra,
      });
      expect(response.status, JSON.stringify(extra)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
      expect(
        response.body.validationErrors.map((e: { property: string }) => e.property),
        JSON.stringify(extra),
      ).toEqual(expected);
    }
    expect(await t.db('rolling_groups').where({ project_id: projectId })).toHaveLength(0);
  });

  it('refuses a duplicate group name in the project, and an unknown or deleted project', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    await group(projectId, [ids[0]!], { name: 'Tier' });
    const duplicate = await t.admin.post('/api/project/rolling-group', {
      projectId,
      name: 'TIER',
      memberStepIds: [ids[1]],
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.validationErrors[0].property).toBe('name');
    expect(await membershipOf(projectId)).toEqual([expect.any(String), null]);
    expect(
      (await t.admin.post('/api/project/rolling-group', { projectId: 'nope', name: 'X', memberStepIds: ['a'] })).status,
    ).toBe(400);
  });

  it('follows the organization maxParallelMachines', async () => {
    const { projectId, ids } = await projectWithSteps(1);
    const organizationId = (await t.db('organizations').first('id')).id;
    await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: 12 });
    try {
      expect(
        (
          await t.admin.post('/api/project/rolling-group', {
            projectId,
            name: 'Wide',
            memberStepIds: ids,
            windowSize: 12,
          })
        ).status,
      ).toBe(200);
    } finally {
      await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: 8 });
    }
  });
});

describe('GET /api/project/rolling-groups', () => {
  it('orders groups by the position of their first member and answers [] when none', async () => {
    const { projectId, ids } = await projectWithSteps(5);
    expect(await groupsOf(projectId)).toEqual([]);
    const late = await group(projectId, [ids[3]!, ids[4]!]);
    const early = await group(projectId, [ids[0]!]);
    const list = await groupsOf(projectId);
    expect(list.map((g) => [g.rollingGroupId, g.order])).toEqual([
      [early, 1],
      [late, 4],
    ]);
    expect((await t.admin.get('/api/project/rolling-groups', { projectId })).body.projectId).toBe(projectId);
  });

  it('answers 400 "invalid project ID" for a missing, unknown or deleted project', async () => {
    const deleted = await project();
    await t.admin.delete('/api/project', { projectId: deleted });
    for (const query of [{}, { projectId: 'nope' }, { projectId: deleted }]) {
      const response = await t.admin.get('/api/project/rolling-groups', query);
      expect(response.status, JSON.stringify(query)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
    const unknown = await t.admin.get('/api/project/rolling-groups', { projectId: deleted });
    expect(unknown.body.error).toMatch(/invalid project ID/i);
  });

  it('answers 400 with validationErrors when a stored group no longer validates', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    await group(projectId, [ids[0]!], { name: 'Fine' });
    await group(projectId, [ids[1]!], { name: 'Wide', windowSize: 6 });
    const organizationId = (await t.db('organizations').first('id')).id;
    await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: 4 });
    try {
      const response = await t.admin.get('/api/project/rolling-groups', { projectId });
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({
        errorcode: 3001,
        validationErrors: [
          {
            property: 'rollingGroups[1].windowSize',
            messages: [expect.stringContaining("maxParallelMachines (4) (group 'Wide')")],
          },
        ],
      });
    } finally {
      await t.db('organizations').where({ id: organizationId }).update({ max_parallel_machines: 8 });
    }
    expect((await groupsOf(projectId)).map((g) => g.name)).toEqual(['Fine', 'Wide']);
  });

  it('answers 400 when stored membership is split', async () => {
    const { projectId, ids } = await projectWithSteps(3);
    const id = await group(projectId, [ids[0]!, ids[1]!]);
    // Only a direct write can produce this: every endpoint refuses to split a group.
    await t.db('project_steps').where({ id: ids[1] }).update({ rolling_group_id: null });
    await t.db('project_steps').where({ id: ids[2] }).update({ rolling_group_id: id });
    const response = await t.admin.get('/api/project/rolling-groups', { projectId });
    expect(response.status).toBe(400);
    expect(response.body.validationErrors).toEqual([
      { property: 'rollingGroups[0].memberStepIds', messages: [expect.stringContaining('not consecutive')] },
    ]);
  });
});

describe('PUT /api/project/rolling-group', () => {
  it('changes only the settings sent, never membership or order', async () => {
    const { projectId, ids } = await projectWithSteps(3);
    const id = await group(projectId, [ids[1]!, ids[2]!], { name: 'Before', onNoTargets: 'Warn' });
    const t1 = await tag();
    const updated = await t.admin.put('/api/project/rolling-group', {
      rollingGroupId: id,
      name: 'After',
      windowSize: 3,
      machineOrder: 'TagPriority',
      machineOrderTagIds: [t1],
    });
    expect(updated.status).toBe(200);
    expect(updated.text).toBe('');
    expect((await groupsOf(projectId))[0]).toMatchObject({
      name: 'After',
      windowSize: 3,
      machineOrder: 'TagPriority',
      machineOrderTagIds: [t1],
      onNoTargets: 'Warn',
      order: 2,
      memberStepIds: [ids[1], ids[2]],
    });
  });

  it('refuses memberStepIds and order in the body, and a resulting group that breaks the rules', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    const t1 = await tag();
    const id = await group(projectId, [ids[0]!], {
      name: 'Strict',
      machineOrder: 'TagPriority',
      machineOrderTagIds: [t1],
    });
    const cases: Array<[Record<string, unknown>, string[]]> = [
      [{ memberStepIds: ids }, ['memberStepIds']],
      [{ order: 1 }, ['order']],
      [{ MemberStepIds: [] }, ['memberStepIds']],
      [{ machineOrder: 'MachineName' }, ['machineOrderTagIds']],
      [{ windowSize: 9 }, ['windowSize']],
      [
        { waitBetweenMachineGroups: true, machineOrder: 'MachineName', machineOrderTagIds: [] },
        ['waitBetweenMachineGroups'],
      ],
      [{ onMemberFailure: 'Nope' }, ['onMemberFailure']],
    ];
    for (const [body, expected] of cases) {
      const response = await t.admin.put('/api/project/rolling-group', {
        rollingGroupId: id,
        name: 'Changed',
        ...body,
      });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(
        response.body.validationErrors.map((e: { property: string }) => e.property),
        JSON.stringify(body),
      ).toEqual(expected);
    }
    const [row] = await t.db('rolling_groups').where({ id });
    expect(row).toMatchObject({ name: 'Strict', machine_order: 'TagPriority', window_size: 1 });
    expect(await membershipOf(projectId)).toEqual([id, null]);
    expect(
      (
        await t.admin.put('/api/project/rolling-group', {
          rollingGroupId: id,
          machineOrder: 'MachineName',
          machineOrderTagIds: [],
        })
      ).status,
    ).toBe(200);
    expect((await t.admin.put('/api/project/rolling-group', { rollingGroupId: 'nope', name: 'x' })).status).toBe(400);
  });
});

describe('DELETE /api/project/rolling-group', () => {
  it('dissolves the group and keeps its steps, released and in place', async () => {
    const { projectId, ids } = await projectWithSteps(3);
    const id = await group(projectId, [ids[0]!, ids[1]!]);
    expect((await t.admin.delete('/api/project/rolling-group', { rollingGroupId: id })).status).toBe(200);
    expect(await t.db('rolling_groups').where({ id })).toHaveLength(0);
    const steps = await t.db('project_steps').where({ project_id: projectId }).orderBy('sort_order');
    expect(steps.map((s) => [s.id, s.rolling_group_id])).toEqual(ids.map((i) => [i, null]));
    expect(await groupsOf(projectId)).toEqual([]);
    expect((await t.admin.delete('/api/project/rolling-group', { rollingGroupId: id })).status).toBe(400);
  });
});

describe('PUT /api/project/step/rolling-group', () => {
  it('moves a step into a group at either end, and out of it at either end', async () => {
    const { projectId, ids } = await projectWithSteps(5);
    const id = await group(projectId, [ids[2]!]);
    const move = (step: string, rollingGroupId: string | null) =>
      t.admin.put('/api/project/step/rolling-group', { projectStepId: step, rollingGroupId });
    expect((await move(ids[1]!, id)).status).toBe(200);
    expect((await move(ids[3]!, id)).status).toBe(200);
    expect(await membershipOf(projectId)).toEqual([null, id, id, id, null]);
    expect((await groupsOf(projectId))[0]).toMatchObject({ order: 2, memberStepIds: [ids[1], ids[2], ids[3]] });
    expect((await move(ids[1]!, null)).status).toBe(200);
    expect(await membershipOf(projectId)).toEqual([null, null, id, id, null]);
    expect((await move(ids[0]!, null)).status).toBe(200);
  });

  it('refuses a move that would split or empty a group, changing nothing', async () => {
    const { projectId, ids } = await projectWithSteps(5);
    const id = await group(projectId, [ids[1]!, ids[2]!, ids[3]!]);
    const single = await group(projectId, [ids[4]!]);
    const cases: Array<[string, string | null]> = [
      [ids[2]!, null],
      [ids[4]!, null],
      [ids[0]!, single],
      [ids[2]!, single],
    ];
    for (const [step, target] of cases) {
      const response = await t.admin.put('/api/project/step/rolling-group', {
        projectStepId: step,
        rollingGroupId: target,
      });
      expect(response.status, `${step} → ${target}`).toBe(400);
      expect(response.body.validationErrors[0].property).toBe('projectStepId');
    }
    expect(await membershipOf(projectId)).toEqual([null, id, id, id, single]);
  });

  it('refuses a group of another project, an unknown group and an unknown step', async () => {
    const { ids } = await projectWithSteps(1);
    const other = await projectWithSteps(1);
    const foreign = await group(other.projectId, other.ids);
    for (const body of [
      { projectStepId: ids[0], rollingGroupId: foreign },
      { projectStepId: ids[0], rollingGroupId: 'nope' },
      { projectStepId: 'nope', rollingGroupId: null },
      { projectStepId: ids[0] },
    ]) {
      const response = await t.admin.put('/api/project/step/rolling-group', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    expect((await t.db('project_steps').where({ id: ids[0] }))[0].rolling_group_id).toBeNull();
  });
});

describe('steps of rolling groups', () => {
  it('refuses a new step order that splits a group, and accepts one moving the whole group', async () => {
    const { projectId, ids } = await projectWithSteps(4);
    const [a, b, c, d] = ids as [string, string, string, string];
    const id = await group(projectId, [b, c]);
    const split = await t.admin.put('/api/project/steps/order', { projectId, projectStepIds: [b, a, c, d] });
    expect(split.status).toBe(400);
    expect(split.body.validationErrors).toEqual([
      { property: 'projectStepIds', messages: [expect.stringContaining('split rolling group')] },
    ]);
    expect(
      (await t.db('project_steps').where({ project_id: projectId }).orderBy('sort_order')).map((s) => s.id),
    ).toEqual(ids);
    expect((await t.admin.put('/api/project/steps/order', { projectId, projectStepIds: [d, b, c, a] })).status).toBe(
      200,
    );
    expect((await groupsOf(projectId))[0]).toMatchObject({ rollingGroupId: id, order: 2, memberStepIds: [b, c] });
  });

  it('deletes a group with its only member, and keeps a group whose middle member is deleted', async () => {
    const { projectId, ids } = await projectWithSteps(5);
    const [a, b, c, d, e] = ids as [string, string, string, string, string];
    const only = await group(projectId, [a]);
    const run = await group(projectId, [b, c, d]);
    expect((await t.admin.delete('/api/project/step', { projectStepId: a })).status).toBe(200);
    expect(await t.db('rolling_groups').where({ id: only })).toHaveLength(0);
    expect((await t.admin.delete('/api/project/step', { projectStepId: c })).status).toBe(200);
    expect(await groupsOf(projectId)).toEqual([
      expect.objectContaining({ rollingGroupId: run, order: 1, memberStepIds: [b, d] }),
    ]);
    const rows = await t.db('project_steps').where({ project_id: projectId }).orderBy('sort_order');
    expect(rows.map((r) => [r.id, r.sort_order, r.rolling_group_id])).toEqual([
      [b, 1, run],
      [d, 2, run],
      [e, 3, null],
    ]);
    expect((await t.admin.delete('/api/project/step', { projectStepId: d })).status).toBe(200);
    expect((await groupsOf(projectId))[0]?.memberStepIds).toEqual([b]);
  });

  it('clones a group member outside any group', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    await group(projectId, ids);
    const cloned = await t.admin.post('/api/project/step/clone', { projectStepId: ids[0] });
    const [row] = await t.db('project_steps').where({ id: cloned.body.projectStepId });
    expect(row).toMatchObject({ rolling_group_id: null, sort_order: 3, name: 'A - Copy' });
  });

  it('keeps a tag that orders a group from being deleted', async () => {
    const { projectId, ids } = await projectWithSteps(1);
    const used = await tag();
    await group(projectId, ids, { machineOrder: 'TagPriority', machineOrderTagIds: [used] });
    const response = await t.admin.delete('/api/tag', { tagId: used });
    expect(response.status).toBe(400);
    expect(await t.db('tags').where({ id: used })).toHaveLength(1);
  });
});

describe('rolling group permissions', () => {
  it('needs EditProject on the project for every endpoint, reads included (401/2003)', async () => {
    const { projectId, ids } = await projectWithSteps(2);
    const id = await group(projectId, [ids[0]!]);
    const otherProject = await project();
    const viewer = await t.account([{ role: 'View' }]);
    const scoped = await t.account([{ role: 'EditProject', projectIds: [otherProject] }]);
    for (const client of [viewer, scoped]) {
      for (const response of [
        await client.get('/api/project/rolling-groups', { projectId }),
        await client.post('/api/project/rolling-group', { projectId, name: 'X', memberStepIds: [ids[1]] }),
        await client.put('/api/project/rolling-group', { rollingGroupId: id, name: 'X' }),
        await client.delete('/api/project/rolling-group', { rollingGroupId: id }),
        await client.put('/api/project/step/rolling-group', { projectStepId: ids[1], rollingGroupId: id }),
      ]) {
        expect(response.status).toBe(401);
        expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('EditProject') });
      }
    }
    const editor = await t.account([{ role: 'EditProject', projectIds: [projectId] }]);
    expect((await editor.get('/api/project/rolling-groups', { projectId })).status).toBe(200);
    expect(await membershipOf(projectId)).toEqual([id, null]);
  });

  it("treats another workspace's projects and groups as unknown", async () => {
    const { projectId, ids } = await projectWithSteps(1);
    const id = await group(projectId, ids);
    const outsider = await t.account([{ role: 'EditProject' }], await t.workspace());
    expect((await outsider.get('/api/project/rolling-groups', { projectId })).status).toBe(400);
    expect((await outsider.put('/api/project/rolling-group', { rollingGroupId: id, name: 'Mine' })).status).toBe(400);
    expect((await outsider.delete('/api/project/rolling-group', { rollingGroupId: id })).status).toBe(400);
    expect(await t.db('rolling_groups').where({ id })).toHaveLength(1);
  });
});
