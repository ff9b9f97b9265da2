/**
 * store.releaseInputs.read (store/release-inputs.ts) reads in ONE statement what a release's
 * snapshot needs. It replaced the per-store reads (channels.findByName/getDefault,
 * projectSteps.listByProject, stepTemplates.get, rollingGroups.listByProject,
 * variables.candidates, scriptModules.importsOf, lifecycles.get + phasesOf): for the same project
 * it must return what they return, field by field. The project is built through the API so its
 * rows are the ones production writes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ReleaseInputs } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { tryRowLock } from '../../helpers/row-locks.ts';

let t: TestContext;
let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}-${Date.now()}`;

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function environment(name: string): Promise<string> {
  return (await ok(t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: unique(name) })))
    .environmentId;
}

async function template(name: string): Promise<string> {
  return (
    await ok(
      t.admin.post('/api/step-template', {
        workspaceId: t.mainWorkspaceId,
        name: unique(name),
        description: `${name} template`,
        script: `echo ${name}`,
        scriptLanguage: 'bash',
        propertiesRaw: JSON.stringify([
          { Id: 'Greeting', Name: 'Greeting', Description: null, DefaultValue: 'hi', ControlType: 'SingleLineText' },
        ]),
      }),
    )
  ).stepTemplateId;
}

async function step(projectId: string, stepTemplateId: string, name: string): Promise<string> {
  return (await ok(t.admin.post('/api/project/step', { projectId, name, stepTemplateId }))).projectStepId;
}

async function value(path: string, body: Record<string, unknown>): Promise<string> {
  return (await ok(t.admin.post(path, body))).variableValueId;
}

/** What the per-store reads the statement replaced return for the same query. */
async function perStoreReads(query: {
  projectId: string;
  projectLifecycleId: string | null;
  channelName: string | null;
  ignoreDefaultChannel: boolean;
}): Promise<Omit<ReleaseInputs, 'versionClashes'>> {
  const { store } = t.deps;
  const channel = query.channelName
    ? await store.channels.findByName(query.projectId, query.channelName)
    : query.ignoreDefaultChannel
      ? null
      : await store.channels.getDefault(query.projectId);
  const steps = await store.projectSteps.listByProject(query.projectId);
  const templates = new Map();
  for (const id of new Set(steps.map((s) => s.stepTemplateId))) {
    const found = await store.stepTemplates.get(id);
    if (found) templates.set(id, found);
  }
  const lifecycleId = channel?.lifecycleId ?? query.projectLifecycleId;
  const lifecycleRow = lifecycleId ? await store.lifecycles.get(lifecycleId) : null;
  return {
    channel,
    steps,
    templates,
    rollingGroups: await store.rollingGroups.listByProject(query.projectId),
    variables: await store.variables.candidates(query.projectId),
    scriptModules: await store.scriptModules.importsOf(query.projectId),
    lifecycle: lifecycleRow
      ? {
          lifecycle: lifecycleRow,
          phases: (await store.lifecycles.phasesOf([lifecycleRow.id])).get(lifecycleRow.id) ?? [],
        }
      : null,
  };
}

/** Compares part by part (a failure names the part), then as a whole. */
function expectSameInputs(actual: ReleaseInputs, expected: Omit<ReleaseInputs, 'versionClashes'>) {
  expect(actual.channel, 'channel').toEqual(expected.channel);
  expect(actual.steps, 'steps').toEqual(expected.steps);
  expect([...actual.templates.entries()].sort(), 'templates').toEqual([...expected.templates.entries()].sort());
  expect(actual.rollingGroups, 'rollingGroups').toEqual(expected.rollingGroups);
  expect(actual.variables, 'variables').toEqual(expected.variables);
  expect(actual.scriptModules, 'scriptModules').toEqual(expected.scriptModules);
  expect(actual.lifecycle, 'lifecycle').toEqual(expected.lifecycle);
  const { versionClashes: _clashes, ...rest } = actual;
  expect(rest).toStrictEqual(expected);
}

interface Rich {
  projectId: string;
  projectLifecycleId: string;
  betaLifecycleId: string;
  betaName: string;
  stableChannelId: string;
  betaChannelId: string;
  stepIds: string[];
  templateIds: [string, string];
  rollingGroupId: string;
  ownVariableIds: { multi: string; sensitive: string; deleted: string };
  deletedValueId: string;
  workspaceVariableId: string;
  moduleIds: { alpha: string; zeta: string };
  deletedEnvironmentId: string;
}

let rich: Rich;

async function buildRichProject(): Promise<Rich> {
  const [dev1, dev2, test1, prod1, beta1] = await Promise.all(
    ['Dev1', 'Dev2', 'Test1', 'Prod1', 'Beta1'].map((n) => environment(n)),
  );
  const projectLifecycle = await ok(
    t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Main lifecycle'),
      description: 'three phases',
      phases: [
        {
          name: 'Dev',
          environments: [{ environmentId: dev1 }, { environmentId: dev2, howToTrigger: 'Automatic' }],
        },
        { name: 'Test', environments: [{ environmentId: test1, requiredApprovals: 2 }] },
        { name: 'Prod', environments: [{ environmentId: prod1 }] },
      ],
    }),
  );
  const betaLifecycle = await ok(
    t.admin.post('/api/lifecycle', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Beta lifecycle'),
      phases: [{ name: 'Beta', environments: [{ environmentId: beta1 }, { environmentId: dev1 }] }],
    }),
  );
  const { projectId } = await ok(
    t.admin.post('/api/project', {
      workspaceId: t.mainWorkspaceId,
      name: unique('Rich'),
      lifecycleId: projectLifecycle.lifecycleId,
    }),
  );

  const stable = await ok(t.admin.post('/api/project/channel', { projectId, name: 'Stable', isDefault: true }));
  const betaName = 'Beta Testers';
  const beta = await ok(
    t.admin.post('/api/project/channel', {
      projectId,
      name: betaName,
      description: 'early',
      lifecycleId: betaLifecycle.lifecycleId,
      preReleaseTag: '^beta',
      packageRules: [{ packageId: 'Web', versionRange: '^1.2', preReleaseTag: '^$' }, { packageId: 'Worker' }],
    }),
  );

  const templateA = await template('A');
  const templateB = await template('B');
  const stepIds = [
    await step(projectId, templateA, 'First'),
    await step(projectId, templateB, 'Second'),
    await step(projectId, templateA, 'Third'),
    await step(projectId, templateB, 'Fourth'),
  ];
  await ok(
    t.admin.put('/api/project/step', {
      projectStepId: stepIds[1],
      propertiesJson: JSON.stringify({ Greeting: 'hello' }),
      environmentIds: [dev1],
    }),
  );
  const { rollingGroupId } = await ok(
    t.admin.post('/api/project/rolling-group', {
      projectId,
      name: unique('Group'),
      memberStepIds: [stepIds[1], stepIds[2]],
      windowSize: 2,
    }),
  );

  const ownVariable = async (name: string, variableType = 'Text') =>
    (await ok(t.admin.post('/api/project/variable', { projectId, name, variableType, description: `${name}!` })))
      .variableId as string;
  const multi = await ownVariable('Greeting');
  await value('/api/project/variable/value', { variableId: multi, theValue: 'hello everyone' });
  await value('/api/project/variable/value', {
    variableId: multi,
    theValue: 'hello dev',
    environmentsFilter: [dev1],
  });
  const deletedValueId = await value('/api/project/variable/value', {
    variableId: multi,
    theValue: 'gone',
    environmentsFilter: [test1],
  });
  await value('/api/project/variable/value', {
    variableId: multi,
    theValue: 'hello step',
    stepFilter: [stepIds[0]],
    channelFilter: [beta.channelId],
  });
  await ok(t.admin.delete('/api/project/variable/value', { variableValueId: deletedValueId }));
  const sensitive = await ownVariable('Password', 'Sensitive');
  await value('/api/project/variable/value', { variableId: sensitive, theValue: 's3cret' });
  const deleted = await ownVariable('Old');
  await value('/api/project/variable/value', { variableId: deleted, theValue: 'old value' });
  await ok(t.admin.delete('/api/project/variable', { variableId: deleted }));

  const workspaceVariable = async (name: string) =>
    (
      await ok(
        t.admin.post('/api/workspace-variable', {
          workspaceId: t.mainWorkspaceId,
          name: unique(name),
          variableType: 'Text',
        }),
      )
    ).variableId as string;
  const region = await workspaceVariable('Region');
  await value('/api/workspace-variable/value', { variableId: region, theValue: 'eu-west' });
  await value('/api/workspace-variable/value', {
    variableId: region,
    theValue: 'us-east',
    environmentsFilter: [prod1],
  });
  const notImported = await workspaceVariable('NotImported');
  await value('/api/workspace-variable/value', { variableId: notImported, theValue: 'never seen' });
  await ok(t.admin.post('/api/project/workspace-variable', { projectId, variableId: region }));

  const scriptModule = async (name: string) =>
    (
      await ok(
        t.admin.post('/api/script-module', {
          workspaceId: t.mainWorkspaceId,
          name,
          description: `${name} module`,
          script: `echo ${name}`,
          scriptLanguage: 'bash',
        }),
      )
    ).scriptModuleId as string;
  // Imported zeta first: the read orders modules by name, not by import.
  const zeta = await scriptModule(unique('zeta'));
  const alpha = await scriptModule(unique('alpha'));
  await scriptModule(unique('not-imported'));
  await ok(t.admin.post('/api/project/script-module', { projectId, scriptModuleId: zeta }));
  await ok(t.admin.post('/api/project/script-module', { projectId, scriptModuleId: alpha }));

  // Soft-deleted after the lifecycles name it: it drops out of both reads' phases.
  await ok(t.admin.delete('/api/environment', { environmentId: dev2 }));

  return {
    projectId,
    projectLifecycleId: projectLifecycle.lifecycleId,
    betaLifecycleId: betaLifecycle.lifecycleId,
    betaName,
    stableChannelId: stable.channelId,
    betaChannelId: beta.channelId,
    stepIds,
    templateIds: [templateA, templateB],
    rollingGroupId,
    ownVariableIds: { multi, sensitive, deleted },
    deletedValueId,
    workspaceVariableId: region,
    moduleIds: { alpha, zeta },
    deletedEnvironmentId: dev2!,
  };
}

type ReadQuery = Parameters<TestContext['deps']['store']['releaseInputs']['lockProjectAndRead']>[0];
const lockAndRead = (query: Partial<ReadQuery> = {}) =>
  t.deps.store.releaseInputs.lockProjectAndRead({
    projectId: rich.projectId,
    version: '9.9.9',
    channelName: null,
    ignoreDefaultChannel: false,
    ...query,
  });
const read = async (query: Partial<ReadQuery> = {}) => (await lockAndRead(query)).inputs;

beforeAll(async () => {
  t = await testApp();
  rich = await buildRichProject();
});

describe('store.releaseInputs.read equals the per-store reads it replaced', () => {
  it('with the default channel: the project lifecycle, its live phases and environments, every part', async () => {
    const inputs = await read();
    const expected = await perStoreReads({ ...rich, channelName: null, ignoreDefaultChannel: false });
    expectSameInputs(inputs, expected);

    // The fixture is rich, so the equality above compared real content, not empty lists.
    expect(inputs.channel?.id).toBe(rich.stableChannelId);
    expect(inputs.steps.map((s) => s.id)).toEqual(rich.stepIds);
    expect([...inputs.templates.keys()].sort()).toEqual([...rich.templateIds].sort());
    expect(inputs.rollingGroups.map((g) => g.id)).toEqual([rich.rollingGroupId]);
    expect(inputs.steps.map((s) => s.rollingGroupId)).toEqual([null, rich.rollingGroupId, rich.rollingGroupId, null]);
    const variableIds = inputs.variables.map((c) => c.variable.id);
    expect(new Set(variableIds)).toEqual(
      new Set([rich.ownVariableIds.multi, rich.ownVariableIds.sensitive, rich.workspaceVariableId]),
    );
    // The own variable's 3 live values, oldest first; the deleted one left out.
    expect(
      inputs.variables.filter((c) => c.variable.id === rich.ownVariableIds.multi).map((c) => c.value.plain),
    ).toEqual(['hello everyone', 'hello dev', 'hello step']);
    expect(inputs.variables.map((c) => c.value.id)).not.toContain(rich.deletedValueId);
    expect(
      inputs.variables.filter((c) => c.variable.id === rich.workspaceVariableId).map((c) => c.value.plain),
    ).toEqual(['eu-west', 'us-east']);
    const secret = inputs.variables.find((c) => c.variable.id === rich.ownVariableIds.sensitive)!;
    expect(secret.value.plain).toBeNull();
    expect(secret.value.encrypted).toEqual(expect.any(String));
    expect(inputs.scriptModules.map((m) => m.id)).toEqual([rich.moduleIds.alpha, rich.moduleIds.zeta]);
    expect(inputs.lifecycle?.lifecycle.id).toBe(rich.projectLifecycleId);
    expect(inputs.lifecycle?.phases.map((p) => p.name)).toEqual(['Dev', 'Test', 'Prod']);
    expect(inputs.lifecycle?.phases[0]!.environments.map((e) => e.environmentId)).not.toContain(
      rich.deletedEnvironmentId,
    );
    expect(inputs.lifecycle?.phases[0]!.environments).toHaveLength(1);
    expect(inputs.lifecycle?.phases[1]!.environments[0]!.requiredApprovals).toBe(2);
  });

  it('with a named channel in another case: that channel and its own lifecycle', async () => {
    const channelName = rich.betaName.toUpperCase();
    const inputs = await read({ channelName });
    expectSameInputs(inputs, await perStoreReads({ ...rich, channelName, ignoreDefaultChannel: false }));
    expect(inputs.channel?.id).toBe(rich.betaChannelId);
    expect(inputs.channel?.packageRules).toHaveLength(2);
    expect(inputs.lifecycle?.lifecycle.id).toBe(rich.betaLifecycleId);
    expect(inputs.lifecycle?.phases.map((p) => p.name)).toEqual(['Beta']);
    expect(inputs.lifecycle?.phases[0]!.environments).toHaveLength(2);
  });

  it('ignoring the default channel: no channel, the project lifecycle', async () => {
    const inputs = await read({ ignoreDefaultChannel: true });
    expectSameInputs(inputs, await perStoreReads({ ...rich, channelName: null, ignoreDefaultChannel: true }));
    expect(inputs.channel).toBeNull();
    expect(inputs.lifecycle?.lifecycle.id).toBe(rich.projectLifecycleId);
    expect(inputs.steps).toHaveLength(4);
  });

  it('a named channel wins over ignoreDefaultChannel', async () => {
    const inputs = await read({ channelName: rich.betaName.toLowerCase(), ignoreDefaultChannel: true });
    expectSameInputs(
      inputs,
      await perStoreReads({ ...rich, channelName: rich.betaName.toLowerCase(), ignoreDefaultChannel: true }),
    );
    expect(inputs.channel?.id).toBe(rich.betaChannelId);
  });

  it('a channel name the project does not have: no channel (not the default one)', async () => {
    const inputs = await read({ channelName: 'No such channel' });
    expectSameInputs(
      inputs,
      await perStoreReads({ ...rich, channelName: 'No such channel', ignoreDefaultChannel: false }),
    );
    expect(inputs.channel).toBeNull();
    expect(inputs.lifecycle?.lifecycle.id).toBe(rich.projectLifecycleId);
  });

  it('a project with no lifecycle of its own and no channel: lifecycle null', async () => {
    const { projectId } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('No lifecycle') }),
    );
    const inputs = await read({ projectId, ignoreDefaultChannel: true });
    expect(inputs.lifecycle).toBeNull();
    expect(inputs.channel).toBeNull();
  });
});

describe('store.releaseInputs.lockProjectAndRead: the project', () => {
  it('answers the live project as projects.getWithOrganization does, and its lifecycle decides', async () => {
    const { project } = await lockAndRead();
    expect(project).toEqual(await t.deps.store.projects.getWithOrganization(rich.projectId));
    expect(project?.resource.lifecycleId).toBe(rich.projectLifecycleId);
    expect(project?.resource.createdUtc).toBeInstanceOf(Date);
  });

  it('answers null for a project that does not exist or is deleted', async () => {
    expect((await lockAndRead({ projectId: 'Projects-none' })).project).toBeNull();
    const { projectId } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Gone') }),
    );
    expect((await lockAndRead({ projectId })).project?.resource.id).toBe(projectId);
    await ok(t.admin.delete('/api/project', { projectId }));
    expect((await lockAndRead({ projectId })).project).toBeNull();
  });

  it('holds the project locked until its transaction ends, as every project lock, without holding back inserts that reference it', async () => {
    const lockers: Record<string, (tx: TestContext['deps']['store']) => Promise<unknown>> = {
      'releaseInputs.lockProjectAndRead': (tx) =>
        tx.releaseInputs.lockProjectAndRead({
          projectId: rich.projectId,
          version: '9.9.9',
          channelName: null,
          ignoreDefaultChannel: false,
        }),
      'projects.getWithOrganization': (tx) => tx.projects.getWithOrganization(rich.projectId, { lock: true }),
      'projectSteps.lockProject': (tx) => tx.projectSteps.lockProject(rich.projectId),
      'channels.lockProject': (tx) => tx.channels.lockProject(rich.projectId),
    };
    const attempt = (mode: 'NO KEY UPDATE' | 'KEY SHARE') => tryRowLock(t.db, 'projects', rich.projectId, mode);
    for (const [name, lock] of Object.entries(lockers)) {
      await t.deps.store.transaction(async (tx) => {
        await lock(tx);
        // Another transaction cannot take the project's lock meanwhile…
        expect(await attempt('NO KEY UPDATE'), name).toBe('55P03');
        // …but a foreign-key check (FOR KEY SHARE: a deployment inserted in the project) goes on.
        expect(await attempt('KEY SHARE'), name).toBe('taken');
      });
      expect(await attempt('NO KEY UPDATE'), `${name}, after its transaction`).toBe('taken');
    }
  });
});

describe('store.releaseInputs.read: version clashes', () => {
  let projectId: string;
  const versions = ['1.0.0+a', '1.0.0-rc.1', '2.0.0'];
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    ({ projectId } = await ok(t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Clash') })));
    for (const version of versions)
      ids[version] = (await ok(t.admin.post('/api/release', { projectId, version }))).releaseId;
    // The same version in another project clashes with nothing here.
    const { projectId: other } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Other') }),
    );
    await ok(t.admin.post('/api/release', { projectId: other, version: '1.0.0+b' }));
  });

  const clashes = async (version: string) =>
    (await read({ projectId, version })).versionClashes.sort((a, b) => a.version.localeCompare(b.version));

  it('finds the exact version', async () => {
    expect(await clashes('1.0.0+a')).toEqual([{ id: ids['1.0.0+a'], version: '1.0.0+a' }]);
    expect(await clashes('2.0.0')).toEqual([{ id: ids['2.0.0'], version: '2.0.0' }]);
  });

  it('finds a version that differs only by build metadata, not a pre-release of it', async () => {
    expect(await clashes('1.0.0+b')).toEqual([{ id: ids['1.0.0+a'], version: '1.0.0+a' }]);
    expect(await clashes('1.0.0')).toEqual([{ id: ids['1.0.0+a'], version: '1.0.0+a' }]);
    expect(await clashes('1.0.0-rc.1+build.7')).toEqual([{ id: ids['1.0.0-rc.1'], version: '1.0.0-rc.1' }]);
  });

  it('finds nothing for an unused version', async () => {
    expect(await clashes('1.0.1')).toEqual([]);
    expect(await clashes('1.0.0-rc.2')).toEqual([]);
  });

  it('the release route refuses the build-metadata-only clash and takes the pre-release-different one', async () => {
    const refused = await t.admin.post('/api/release', { projectId, version: '1.0.0+c' });
    expect(refused.status, refused.text).toBe(400);
    await ok(t.admin.post('/api/release', { projectId, version: '1.0.0-rc.2' }));
  });
});

describe('store.releaseInputs.read: what is gone', () => {
  it('leaves a deleted template out of the templates, keeping the step that uses it', async () => {
    const live = await template('Live');
    const doomed = await template('Doomed');
    const { projectId } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Orphan') }),
    );
    const liveStep = await step(projectId, live, 'Live step');
    const orphanStep = await step(projectId, doomed, 'Orphan step');
    // The API refuses to delete a template in use, so it is soft-deleted underneath (as a race would leave it).
    expect(await t.db('step_templates').where({ id: doomed }).update({ deleted_at: new Date() })).toBe(1);

    const inputs = await read({ projectId });
    expectSameInputs(
      inputs,
      await perStoreReads({ projectId, projectLifecycleId: null, channelName: null, ignoreDefaultChannel: false }),
    );
    expect(inputs.steps.map((s) => s.id)).toEqual([liveStep, orphanStep]);
    expect([...inputs.templates.keys()]).toEqual([live]);
    expect(inputs.templates.has(doomed)).toBe(false);
    // And a release of it is refused for that reason.
    const refused = await t.admin.post('/api/release', { projectId, version: '1.0.0' });
    expect(refused.status, refused.text).toBe(400);
    expect(refused.text).toContain(doomed);
  });

  it('yields no steps, channel or rolling groups for a deleted project', async () => {
    const { projectId } = await ok(
      t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: unique('Deleted') }),
    );
    const stepIds = [
      await step(projectId, rich.templateIds[0], 'One'),
      await step(projectId, rich.templateIds[1], 'Two'),
    ];
    await ok(t.admin.post('/api/project/channel', { projectId, name: 'Default', isDefault: true }));
    await ok(t.admin.post('/api/project/rolling-group', { projectId, name: unique('G'), memberStepIds: stepIds }));
    const before = await read({ projectId, channelName: 'default' });
    expect(before.steps).toHaveLength(2);
    expect(before.channel).not.toBeNull();
    expect(before.rollingGroups).toHaveLength(1);
    expect(before.templates.size).toBe(2);

    await ok(t.admin.delete('/api/project', { projectId }));
    for (const query of [{ channelName: 'default' }, { channelName: null }]) {
      const after = await read({ projectId, ...query });
      expect(after.steps).toEqual([]);
      expect(after.channel).toBeNull();
      expect(after.rollingGroups).toEqual([]);
      expect(after.templates.size).toBe(0);
      expectSameInputs(
        after,
        await perStoreReads({ projectId, projectLifecycleId: null, ignoreDefaultChannel: false, ...query }),
      );
    }
  });
});
