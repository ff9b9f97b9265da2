import { beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../../services/core/index.ts';
import { cloneProject } from '../../../services/domain/project-clone.ts';
import type { Store } from '../../../services/store/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';

let t: TestContext;
let templateId: string;
let environmentId: string;
let lifecycleId: string;
let counter = 0;
const unique = (prefix: string) => `${prefix} ${++counter}`;

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

interface Source {
  projectId: string;
  steps: string[];
  groupId: string;
  channels: { stable: string; beta: string };
  moduleId: string;
  workspaceVariableId: string;
}

/** A project using every part a clone copies, with filters that point at its own steps and channels. */
async function richProject(): Promise<Source> {
  const { projectId } = await ok(
    t.admin.post('/api/project', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Shop'),
      description: 'web shop',
      lifecycleId,
    }),
  );
  const steps: string[] = [];
  for (const name of ['Migrate', 'Deploy web', 'Deploy api']) {
    steps.push(
      (await ok(t.admin.post('/api/project/step', { projectId, name, stepTemplateId: templateId }))).projectStepId,
    );
  }
  const { tagId } = await ok(t.admin.post('/api/tag', { workspaceId: t.mainWorkspaceId, name: unique('web') }));
  await ok(
    t.admin.put('/api/project/step', {
      projectStepId: steps[1],
      environments: [environmentId],
      machineTagFilter: [{ tagIds: [tagId] }],
      parallelMachines: 2,
      propertiesJson: '{"a":"1"}',
    }),
  );
  const { rollingGroupId: groupId } = await ok(
    t.admin.post('/api/project/rolling-group', {
      projectId,
      name: 'Web tier',
      memberStepIds: [steps[1], steps[2]],
      windowSize: 1,
    }),
  );
  const { channelId: stable } = await ok(
    t.admin.post('/api/project/channel', {
      projectId,
      name: 'Stable',
      isDefault: true,
      versionRange: '>=1.0.0 <2.0.0',
      packageRules: [{ packageId: 'web', versionRange: '^1.2.0' }],
    }),
  );
  const { channelId: beta } = await ok(
    t.admin.post('/api/project/channel', { projectId, name: 'Beta', preReleaseTag: '^beta' }),
  );
  const { variableId: greeting } = await ok(
    t.admin.post('/api/project/variable', { projectId, name: 'Greeting', variableType: 'Text' }),
  );
  await ok(t.admin.post('/api/project/variable/value', { variableId: greeting, theValue: 'hello' }));
  await ok(
    t.admin.post('/api/project/variable/value', {
      variableId: greeting,
      theValue: 'hi beta',
      stepFilter: [steps[0]],
      channelFilter: [beta],
      environmentsFilter: [environmentId],
      tagFilter: [{ tagIds: [tagId] }],
    }),
  );
  const { variableId: password } = await ok(
    t.admin.post('/api/project/variable', { projectId, name: 'Password', variableType: 'Sensitive' }),
  );
  await ok(
    t.admin.post('/api/project/variable/value', { variableId: password, theValue: 's3cret', channelFilter: [stable] }),
  );
  const { scriptModuleId: moduleId } = await ok(
    t.admin.post('/api/script-module', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Helpers'),
      script: 'say() { echo; }',
      scriptLanguage: 'bash',
    }),
  );
  await ok(t.admin.post('/api/project/script-module', { projectId, scriptModuleId: moduleId }));
  const { variableId: workspaceVariableId } = await ok(
    t.admin.post('/api/workspace-variable', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Region'),
      variableType: 'Text',
    }),
  );
  await ok(t.admin.post('/api/project/workspace-variable', { projectId, variableId: workspaceVariableId }));
  return { projectId, steps, groupId, channels: { stable, beta }, moduleId, workspaceVariableId };
}

/** Everything the API shows about a project. */
async function contentOf(projectId: string) {
  return {
    project: await ok(t.admin.get('/api/project/details', { projectId })),
    steps: (await ok(t.admin.get('/api/project/steps', { projectId }))).steps as Array<Record<string, any>>,
    groups: (await ok(t.admin.get('/api/project/rolling-groups', { projectId }))).rollingGroups as Array<
      Record<string, any>
    >,
    channels: (await ok(t.admin.get('/api/project/channels', { projectId }))).channels as Array<Record<string, any>>,
    variables: (await ok(t.admin.get('/api/project/variables', { projectId }))).variables as Array<Record<string, any>>,
    modules: await ok(t.admin.get('/api/project/script-modules', { projectId })),
    imports: await ok(t.admin.get('/api/project/workspace-variables', { projectId })),
  };
}

async function tableCounts(): Promise<Record<string, number>> {
  const tables = await t.db.raw(
    "select table_name from information_schema.tables where table_schema = 'public' and table_name not like 'knex_%'",
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables.rows as Array<{ table_name: string }>) {
    const [row] = await t.db(table_name).count({ n: '*' });
    counts[table_name] = Number(row?.n);
  }
  return counts;
}

beforeAll(async () => {
  t = await testApp();
  templateId = (
    await ok(
      t.admin.post('/api/step-template', {
        workspaceId: t.mainWorkspaceId,
        name: 'Script',
        script: 'echo',
        scriptLanguage: 'bash',
      }),
    )
  ).stepTemplateId;
  const environments = await ok(t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId }));
  environmentId = environments.environments[0].environmentId;
  lifecycleId = (await ok(t.admin.post('/api/lifecycle', { workspaceId: t.mainWorkspaceId, name: 'Clone lifecycle' })))
    .lifecycleId;
});

describe('POST /api/project/clone', () => {
  it('copies steps, groups, channels, variables and imports with new IDs, remapping references to the copies', async () => {
    const source = await richProject();
    const before = await contentOf(source.projectId);
    const cloned = await t.admin.post('/api/project/clone', { projectId: source.projectId, name: 'Shop copy' });
    expect(cloned.status, cloned.text).toBe(200);
    expect(cloned.body).toEqual({ projectId: expect.any(String) });
    const copyId = cloned.body.projectId as string;
    expect(copyId).not.toBe(source.projectId);
    const copy = await contentOf(copyId);

    expect(copy.project).toEqual({
      ...before.project,
      projectId: copyId,
      name: 'Shop copy',
      createdUtc: expect.any(String),
    });

    // Steps: same content and order; new IDs; the group membership points at the copied group.
    const stepMap = new Map(
      before.steps.map((s, i) => [s.projectStepId as string, copy.steps[i]!.projectStepId as string]),
    );
    const groupMap = new Map([[source.groupId, copy.groups[0]!.rollingGroupId as string]]);
    expect(copy.steps).toHaveLength(3);
    expect(copy.steps).toEqual(
      before.steps.map((s) => ({
        ...s,
        projectStepId: stepMap.get(s.projectStepId),
        rollingGroupId: s.rollingGroupId && groupMap.get(s.rollingGroupId),
      })),
    );
    for (const [from, to] of stepMap) expect(to).not.toBe(from);
    expect(copy.steps[1]!.rollingGroupId).not.toBe(source.groupId);

    // Groups: same settings and order; members are the copied steps.
    expect(copy.groups).toEqual(
      before.groups.map((g) => ({
        ...g,
        rollingGroupId: groupMap.get(g.rollingGroupId),
        projectId: copyId,
        memberStepIds: g.memberStepIds.map((id: string) => stepMap.get(id)),
      })),
    );
    expect(copy.groups[0]!.memberStepIds).toEqual([copy.steps[1]!.projectStepId, copy.steps[2]!.projectStepId]);

    // Channels: same rules, new IDs, the default flag kept.
    const channelMap = new Map(
      before.channels.map((c, i) => [c.channelId as string, copy.channels[i]!.channelId as string]),
    );
    expect(copy.channels).toEqual(
      before.channels.map((c) => ({ ...c, channelId: channelMap.get(c.channelId), projectId: copyId })),
    );
    expect(new Set(copy.channels.map((c) => c.channelId))).not.toContain(source.channels.stable);

    // Variables: same values; step and channel filters point at the copies, the rest unchanged.
    const ids = { ...Object.fromEntries(stepMap), ...Object.fromEntries(channelMap) } as Record<string, string>;
    expect(copy.variables).toEqual(
      before.variables.map((v) => ({
        ...v,
        variableId: expect.any(String),
        values: v.values.map((value: Record<string, any>) => ({
          ...value,
          variableValueId: expect.any(String),
          stepFilter: value.stepFilter.map((id: string) => ids[id]),
          channelFilter: value.channelFilter.map((id: string) => ids[id]),
        })),
      })),
    );
    const greeting = copy.variables.find((v) => v.name === 'Greeting')!;
    expect(greeting.values[1].stepFilter).toEqual([copy.steps[0]!.projectStepId]);
    expect(greeting.values[1].channelFilter).toEqual([channelMap.get(source.channels.beta)]);
    const sourceVariableIds = new Set(before.variables.map((v) => v.variableId));
    for (const v of copy.variables) expect(sourceVariableIds.has(v.variableId)).toBe(false);

    // Imports: the same modules and workspace variables.
    expect(copy.modules).toEqual({ ...before.modules, projectId: copyId });
    expect(copy.imports).toEqual({ ...before.imports, projectId: copyId });
    expect(JSON.stringify(copy.modules)).toContain(source.moduleId);
    expect(JSON.stringify(copy.imports)).toContain(source.workspaceVariableId);
  });

  it('keeps the Sensitive ciphertext as is and stores no plain text for it', async () => {
    const source = await richProject();
    const { projectId } = await ok(
      t.admin.post('/api/project/clone', { projectId: source.projectId, name: unique('Secret copy') }),
    );
    const sensitiveRows = (projectId: string) =>
      t
        .db('variable_values as vv')
        .join('variables as v', 'v.id', 'vv.variable_id')
        .where({ 'v.project_id': projectId, 'v.name': 'Password' })
        .select('vv.*');
    const [original] = await sensitiveRows(source.projectId);
    const [copied] = await sensitiveRows(projectId);
    expect(copied.value_encrypted).toBe(original.value_encrypted);
    expect(copied.value_plain).toBeNull();
    expect(copied.id).not.toBe(original.id);
    const copies = await t.db('variables').where({ project_id: projectId });
    expect(copies.every((row) => row.workspace_id === t.mainWorkspaceId && row.deleted_at === null)).toBe(true);
  });

  it('leaves the source unchanged when it is cloned', async () => {
    const source = await richProject();
    const before = await contentOf(source.projectId);
    const rowsBefore = await t.db('project_steps').where({ project_id: source.projectId }).orderBy('id');
    await ok(t.admin.post('/api/project/clone', { projectId: source.projectId, name: unique('Copy') }));
    expect(await contentOf(source.projectId)).toEqual(before);
    expect(await t.db('project_steps').where({ project_id: source.projectId }).orderBy('id')).toEqual(rowsBefore);
  });

  it('clones an empty project into a project with no parts', async () => {
    const { projectId: empty } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Empty') }),
    );
    const { projectId } = await ok(
      t.admin.post('/api/project/clone', { projectId: empty, name: unique('Empty copy') }),
    );
    const copy = await contentOf(projectId);
    expect([copy.steps, copy.groups, copy.channels, copy.variables]).toEqual([[], [], [], []]);
    expect(copy.project.lifecycleId).toBeNull();
  });

  it('refuses a name already used in the workspace, in any case, and stores nothing', async () => {
    const source = await richProject();
    const taken = (await ok(t.admin.get('/api/project/details', { projectId: source.projectId }))).name as string;
    const before = await tableCounts();
    const refused = await t.admin.post('/api/project/clone', {
      projectId: source.projectId,
      name: taken.toUpperCase(),
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'name' }] });
    expect(await tableCounts()).toEqual(before);
  });

  it('refuses unknown, deleted and other-workspace source projects with 400', async () => {
    const otherWorkspace = await t.workspace();
    const { projectId: foreign } = await ok(
      t.admin.post('/api/project', { workspaceId: otherWorkspace, name: unique('Foreign') }),
    );
    const { projectId: deleted } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Gone') }),
    );
    await ok(t.admin.delete('/api/project', { projectId: deleted }));
    const mainAccount = await t.account([{ role: 'EditProject' }, { role: 'View' }]);
    const before = await tableCounts();
    for (const [client, projectId] of [
      [t.admin, 'no-such-project'],
      [t.admin, deleted],
      [mainAccount, foreign],
    ] as const) {
      const refused = await client.post('/api/project/clone', { projectId, name: unique('Nope') });
      expect(refused.status, projectId).toBe(400);
      expect(refused.body).toMatchObject({ errorcode: 3001, validationErrors: [{ property: 'projectId' }] });
    }
    expect(await tableCounts()).toEqual(before);
  });

  it('refuses wrong types and missing properties with 400', async () => {
    for (const body of [{ projectId: 5, name: 'x' }, { projectId: 'p' }, { name: 'x' }, { projectId: 'p', name: '' }]) {
      const refused = await t.admin.post('/api/project/clone', body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.errorcode).toBe(3001);
    }
  });

  it('refuses with 401/2003 an account lacking EditProject, or one limited to some projects that cannot create projects', async () => {
    const source = await richProject();
    const viewer = await t.account([{ role: 'View' }]);
    const limited = await t.account([
      { role: 'EditProject', projectIds: [source.projectId] },
      { role: 'View', projectIds: [source.projectId] },
    ]);
    const before = await tableCounts();
    for (const client of [viewer, limited]) {
      const refused = await client.post('/api/project/clone', { projectId: source.projectId, name: unique('Denied') });
      expect(refused.status).toBe(401);
      expect(refused.body.errorcode).toBe(2003);
      expect(refused.body.error).toContain('EditProject');
    }
    expect(await tableCounts()).toEqual(before);
  });

  it('lets an unlimited EditProject account clone a project', async () => {
    const source = await richProject();
    const editor = await t.account([{ role: 'EditProject' }]);
    const cloned = await editor.post('/api/project/clone', {
      projectId: source.projectId,
      name: unique('Editor copy'),
    });
    expect(cloned.status, cloned.text).toBe(200);
    expect(await t.db('projects').where({ id: cloned.body.projectId }).first()).toMatchObject({
      workspace_id: t.mainWorkspaceId,
    });
  });

  it('leaves nothing behind when a copy fails midway', async () => {
    const source = await richProject();
    const failing: Store = {
      ...t.deps.store,
      transaction: (fn) =>
        t.deps.store.transaction((tx) =>
          fn({
            ...tx,
            // The last step of the copy fails, after the project, steps, channels and variables were written.
            scriptModules: { ...tx.scriptModules, setImports: () => Promise.reject(new Error('disk full')) },
          }),
        ),
    };
    const organization = await t.db('organizations').first('id');
    const admin: Principal = {
      serviceAccountId: ADMIN.id,
      name: 'admin',
      organizationId: organization.id,
      workspaceId: null,
      roles: [{ role: 'Admin' }],
    };
    const before = await tableCounts();
    await expect(
      cloneProject({ ...t.deps, store: failing }, admin, { projectId: source.projectId, name: unique('Half') }),
    ).rejects.toThrow('disk full');
    expect(await tableCounts()).toEqual(before);
  });
});
