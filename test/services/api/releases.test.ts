import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { testApp, type Client, type TestContext } from '../../helpers/app.ts';
import { manualDeployment } from '../../helpers/deployment-row.ts';
import { archiveFor, multipartBody } from '../packages/archives.ts';

let t: TestContext;
let templateId: string;
let counter = 0;
const unique = (prefix: string) => `${prefix}${++counter}x`;

beforeAll(async () => {
  t = await testApp();
  templateId = await ok(
    t.admin.post('/api/step-template', {
      workspaceId: t.mainWorkspaceId,
      name: 'Deploy package',
      script: 'echo "#{Greeting}"',
      scriptLanguage: 'bash',
      propertiesRaw: JSON.stringify([
        { Id: 'Package', Name: 'Package', Description: null, DefaultValue: '', ControlType: 'PackageSelector' },
        { Id: 'Greeting', Name: 'Greeting', Description: null, DefaultValue: 'hi', ControlType: 'SingleLineText' },
      ]),
    }),
  ).then((b) => b.stepTemplateId);
});

async function ok<T = any>(response: Promise<{ status: number; body: T; text: string }>): Promise<T> {
  const r = await response;
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function upload(fileName: string, workspaceId = t.mainWorkspaceId, client: Client = t.admin): Promise<Buffer> {
  const data = await archiveFor(fileName, [{ name: 'run.sh', data: `echo ${fileName}\n` }]);
  const { payload, headers } = multipartBody([
    { name: 'workspaceId', value: workspaceId },
    { name: 'PackageFile', file: { fileName, data } },
  ]);
  const response = await client.raw({ method: 'POST', path: '/api/packagestore/package', payload, headers });
  expect(response.status, response.text).toBe(200);
  return data;
}

/** A project with one step per package ID (each a PackageSelector value), in the main workspace unless told. */
async function project(
  packageIds: string[],
  options: { workspaceId?: string; lifecycleId?: string } = {},
): Promise<{ projectId: string; stepIds: string[] }> {
  const workspaceId = options.workspaceId ?? t.mainWorkspaceId;
  let stepTemplateId = templateId;
  if (workspaceId !== t.mainWorkspaceId) {
    stepTemplateId = (
      await ok(
        t.admin.post('/api/step-template', {
          workspaceId,
          name: unique('T'),
          script: 'true',
          scriptLanguage: 'bash',
          propertiesRaw: JSON.stringify([
            { Id: 'Package', Name: 'Package', DefaultValue: '', ControlType: 'PackageSelector' },
          ]),
        }),
      )
    ).stepTemplateId;
  }
  const { projectId } = await ok(
    t.admin.post('/api/project', { workspaceId, name: unique('Project'), lifecycleId: options.lifecycleId }),
  );
  const stepIds: string[] = [];
  for (const [index, packageId] of packageIds.entries()) {
    const { projectStepId } = await ok(
      t.admin.post('/api/project/step', { projectId, name: `Step ${index + 1}`, stepTemplateId }),
    );
    await ok(
      t.admin.put('/api/project/step', { projectStepId, propertiesJson: JSON.stringify({ Package: packageId }) }),
    );
    stepIds.push(projectStepId);
  }
  return { projectId, stepIds };
}

const create = (body: Record<string, unknown>, client: Client = t.admin) => client.post('/api/release', body);
const details = (query: Record<string, unknown>, client: Client = t.admin) => client.get('/api/release/details', query);
const row = (releaseId: string) => t.db('releases').where({ id: releaseId }).first();

function expectRefused(response: { status: number; body: any; text: string }, property: string, text?: string) {
  expect(response.status, response.text).toBe(400);
  expect(response.body.errorcode).toBe(3001);
  expect(response.body.validationErrors?.map((e: { property: string }) => e.property)).toContain(property);
  if (text) expect(response.body.error).toContain(text);
}

describe('POST /api/release: package versions', () => {
  it('takes the SemVer maximum, not the newest upload nor the string maximum', async () => {
    const web = unique('Web');
    const api = unique('Api');
    const data = await upload(`${web}.1.10.0.zip`);
    await upload(`${web}.1.9.0.zip`); // newest upload, and the string maximum
    await upload(`${api}.1.0.0.tar.gz`);
    await upload(`${api}.1.0.0-rc.1.tar.gz`); // newest upload, a pre-release of the same version
    const { projectId } = await project([web, api]);

    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    const stored = await row(releaseId);
    expect(stored.package_versions).toEqual({ [web]: '1.10.0', [api]: '1.0.0' });
    const webPackage = stored.snapshot.packages.find((p: { packageId: string }) => p.packageId === web);
    expect(webPackage).toEqual({
      packageId: web,
      version: '1.10.0',
      type: 'zip',
      sizeBytes: data.length,
      sha256: createHash('sha256').update(data).digest('hex'),
    });
    expect(stored.snapshot.packages.map((p: { type: string }) => p.type)).toEqual(['zip', 'tar.gz']);
  });

  it('keeps the versions chosen at creation when a higher package is uploaded afterwards', async () => {
    const web = unique('Web');
    await upload(`${web}.1.0.0.zip`);
    const { projectId } = await project([web]);
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    await upload(`${web}.2.0.0.zip`);

    const read = await ok(details({ releaseId }));
    expect(read.packageVersions).toEqual({ [web]: '1.0.0' });
    expect(read.snapshot.packages[0].version).toBe('1.0.0');
    const next = await ok(create({ projectId, version: '1.0.1' }));
    expect((await row(next.releaseId)).package_versions).toEqual({ [web]: '2.0.0' });
  });

  it('uses the versions given, matching IDs case-insensitively and versions by SemVer precedence', async () => {
    const web = unique('Web');
    await upload(`${web}.1.0.0.zip`);
    await upload(`${web}.1.1.0+build.7.zip`);
    await upload(`${web}.2.0.0.zip`);
    const { projectId } = await project([web]);
    const exact = await ok(create({ projectId, version: '1.0.0', packageVersions: { [web.toUpperCase()]: '1.0.0' } }));
    expect((await row(exact.releaseId)).package_versions).toEqual({ [web]: '1.0.0' });
    // Without build metadata the stored build is found and recorded as uploaded.
    const byPrecedence = await ok(create({ projectId, version: '1.1.0', packageVersions: { [web]: '1.1.0' } }));
    expect((await row(byPrecedence.releaseId)).package_versions).toEqual({ [web]: '1.1.0+build.7' });
  });

  it('refuses a version not in the store, another build of it, a non-SemVer version and an ID not in the project with 400', async () => {
    const web = unique('Web');
    await upload(`${web}.1.0.0+build.1.zip`);
    const { projectId } = await project([web]);
    const cases: Array<[Record<string, string>, string]> = [
      [{ [web]: '9.9.9' }, 'not in the package store'],
      [{ [web]: '1.0.0+build.2' }, 'not in the package store'],
      [{ [web]: 'v1.0.0' }, 'not a valid SemVer'],
      [{ [web]: '1.0' }, 'not a valid SemVer'],
      [{ Unrelated: '1.0.0' }, 'not a package of the project'],
    ];
    for (const [packageVersions, text] of cases) {
      const response = await create({ projectId, version: '1.0.0', packageVersions });
      expectRefused(response, `packageVersions.${Object.keys(packageVersions)[0]}`, text);
    }
    expect(await t.db('releases').where({ project_id: projectId })).toEqual([]);
  });

  it('refuses a project package that has no version in the store with 400', async () => {
    const missing = unique('Missing');
    const { projectId } = await project([missing]);
    expectRefused(
      await create({ projectId, version: '1.0.0' }),
      `packageVersions.${missing}`,
      `no version of package '${missing}'`,
    );
    expect(await t.db('releases').where({ project_id: projectId })).toEqual([]);
  });

  it('leaves out a package only a disabled step references when it has no version', async () => {
    const web = unique('Web');
    const old = unique('Old');
    await upload(`${web}.1.0.0.zip`);
    const { projectId, stepIds } = await project([web, old]);
    await ok(t.admin.put('/api/project/step', { projectStepId: stepIds[1], disabled: true }));
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    expect((await row(releaseId)).package_versions).toEqual({ [web]: '1.0.0' });
  });

  it("never reads another workspace's package store", async () => {
    const other = await t.workspace();
    const web = unique('Web');
    await upload(`${web}.1.0.0.zip`, other);
    const { projectId } = await project([web]);
    expectRefused(await create({ projectId, version: '1.0.0' }), `packageVersions.${web}`);
    expectRefused(
      await create({ projectId, version: '1.0.0', packageVersions: { [web]: '1.0.0' } }),
      `packageVersions.${web}`,
    );
  });
});

describe('POST /api/release: version', () => {
  it.each(['v1.2.3', '1.2', '01.2.3', ' 1.2.3', '1.2.3 ', '1.2.3-', '', '1.2.3-01'])(
    'refuses %j with 400',
    async (version) => {
      const { projectId } = await project([]);
      expectRefused(await create({ projectId, version }), 'version');
      expect(await t.db('releases').where({ project_id: projectId })).toEqual([]);
    },
  );

  it('stores the version exactly as written, build metadata included', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '2.0.0-rc.1+sha.5114f85' }));
    expect((await row(releaseId)).version).toBe('2.0.0-rc.1+sha.5114f85');
  });

  it('requires a version', async () => {
    const { projectId } = await project([]);
    const response = await create({ projectId });
    expect(response.status).toBe(400);
    expect(response.body.errorcode).toBe(3001);
  });

  it('refuses a version already in the project, also with other build metadata, but not in another project', async () => {
    const { projectId } = await project([]);
    await ok(create({ projectId, version: '1.0.0+a' }));
    expectRefused(await create({ projectId, version: '1.0.0+a' }), 'version', 'already exists');
    expectRefused(await create({ projectId, version: '1.0.0+b' }), 'version', 'already exists');
    expectRefused(await create({ projectId, version: '1.0.0' }), 'version', 'already exists');
    expect(await t.db('releases').where({ project_id: projectId })).toHaveLength(1);
    await ok(create({ projectId: (await project([])).projectId, version: '1.0.0+a' }));
  });
  it('accepts exactly one of two concurrent releases of SemVer-equal versions', async () => {
    const { projectId } = await project([]);
    const responses = await Promise.all(
      ['5.0.0+a', '5.0.0+b', '5.0.0'].map((version) => create({ projectId, version })),
    );
    expect(responses.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    expect(await t.db('releases').where({ project_id: projectId })).toHaveLength(1);
  });
  it('refuses a version that another create committed while this one waited for the project lock', async () => {
    // The create locks the project and reads the versions in one statement, whose snapshot is
    // taken before it waits: the insert must check the version again (store/release-inputs.ts).
    const { projectId } = await project([]);
    const holder = await t.db.transaction();
    try {
      await holder.raw('SELECT 1 FROM projects WHERE id = ? FOR UPDATE', [projectId]);
      await holder('releases').insert({
        id: newId(),
        workspace_id: t.mainWorkspaceId,
        project_id: projectId,
        version: '6.0.0+a',
        snapshot: {},
      });
      const waiting = create({ projectId, version: '6.0.0+b' });
      await waitFor(
        async () =>
          (
            await t.db.raw(
              `SELECT 1 FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
                 AND query LIKE '%locked_project%'`,
            )
          ).rows.length > 0,
        { description: 'the create waiting for the project lock' },
      );
      await holder.commit();
      expectRefused(await waiting, 'version', "already exists in the project as '6.0.0+a'");
    } finally {
      if (!holder.isCompleted()) await holder.rollback();
    }
    expect((await t.db('releases').where({ project_id: projectId })).map((r) => r.version)).toEqual(['6.0.0+a']);
  });
});

describe('POST /api/release: channels', () => {
  async function withChannels() {
    const web = unique('Web');
    for (const v of ['1.0.0', '1.5.0', '2.0.0', '2.1.0-beta.1']) await upload(`${web}.${v}.zip`);
    const { projectId } = await project([web]);
    const stable = (
      await ok(
        t.admin.post('/api/project/channel', {
          projectId,
          name: 'Stable',
          isDefault: true,
          versionRange: '<2.0.0',
          preReleaseTag: '^$',
          packageRules: [{ packageId: web.toLowerCase(), versionRange: '^1.0.0' }],
        }),
      )
    ).channelId;
    const beta = (await ok(t.admin.post('/api/project/channel', { projectId, name: 'Beta', preReleaseTag: '^beta' })))
      .channelId;
    return { web, projectId, stable, beta };
  }

  it('uses the default channel and picks the latest package its rule allows when channelName is omitted', async () => {
    const { web, projectId, stable } = await withChannels();
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    const stored = await row(releaseId);
    expect([stored.channel_id, stored.channel_name]).toEqual([stable, 'Stable']);
    expect(stored.snapshot.channel).toEqual({ channelId: stable, name: 'Stable' });
    expect(stored.package_versions).toEqual({ [web]: '1.5.0' });
  });

  it('creates a release without a channel when ignoreDefaultChannel is true', async () => {
    const { web, projectId } = await withChannels();
    const { releaseId } = await ok(create({ projectId, version: '3.0.0', ignoreDefaultChannel: true }));
    const stored = await row(releaseId);
    expect([stored.channel_id, stored.channel_name, stored.snapshot.channel]).toEqual([null, null, null]);
    expect(stored.package_versions).toEqual({ [web]: '2.1.0-beta.1' });
  });

  it('uses the channel named, case-insensitively', async () => {
    const { projectId, beta } = await withChannels();
    const { releaseId } = await ok(create({ projectId, version: '2.0.0-beta.2', channelName: 'BETA' }));
    expect((await row(releaseId)).channel_id).toBe(beta);
  });

  it('refuses an unknown channel with 400', async () => {
    const { projectId } = await withChannels();
    expectRefused(await create({ projectId, version: '1.0.0', channelName: 'Nightly' }), 'channelName', 'Nightly');
  });

  it('refuses a release version outside the channel version range or pre-release tag with 400', async () => {
    const { projectId } = await withChannels();
    expectRefused(await create({ projectId, version: '2.0.0' }), 'version', "channel 'Stable'");
    expectRefused(await create({ projectId, version: '1.0.0-rc.1' }), 'version', "channel 'Stable'");
    expectRefused(await create({ projectId, version: '1.0.0', channelName: 'Beta' }), 'version', "channel 'Beta'");
    expect(await t.db('releases').where({ project_id: projectId })).toEqual([]);
  });

  it('refuses a package version outside the channel package rule with 400', async () => {
    const { web, projectId } = await withChannels();
    expectRefused(
      await create({ projectId, version: '1.0.0', packageVersions: { [web]: '2.0.0' } }),
      `packageVersions.${web}`,
      "channel 'Stable'",
    );
  });

  it('creates a release without a channel when the project has no channels, or none is default and none is named', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    expect((await row(releaseId)).channel_id).toBeNull();
    await ok(t.admin.post('/api/project/channel', { projectId, name: 'Optional' }));
    const blankName = await ok(create({ projectId, version: '1.0.1', channelName: '' }));
    expect((await row(blankName.releaseId)).channel_id).toBeNull();
  });
});

describe('POST /api/release: snapshot', () => {
  it("freezes the channel's lifecycle, else the project's, with phases and environments", async () => {
    const env = (await ok(t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId }))).environments as Array<{
      environmentId: string;
      name: string;
    }>;
    const staging = env.find((e) => e.name === 'Staging')!.environmentId;
    const production = env.find((e) => e.name === 'Production')!.environmentId;
    const projectLifecycle = (
      await ok(
        t.admin.post('/api/lifecycle', {
          workspaceId: t.mainWorkspaceId,
          name: unique('Project LC'),
          phases: [{ name: 'Only', environments: [{ environmentId: staging }] }],
        }),
      )
    ).lifecycleId;
    const channelLifecycle = (
      await ok(
        t.admin.post('/api/lifecycle', {
          workspaceId: t.mainWorkspaceId,
          name: unique('Channel LC'),
          phases: [
            { name: 'Test', environments: [{ environmentId: staging, howToTrigger: 'Automatic' }] },
            { name: 'Live', environments: [{ environmentId: production }], progressRequirement: 'OptionalPhase' },
          ],
        }),
      )
    ).lifecycleId;
    const { projectId } = await project([], { lifecycleId: projectLifecycle });
    await ok(t.admin.post('/api/project/channel', { projectId, name: 'Fast', lifecycleId: channelLifecycle }));

    const viaChannel = await row((await ok(create({ projectId, version: '1.0.0', channelName: 'Fast' }))).releaseId);
    expect(viaChannel.snapshot.lifecycle).toEqual({
      lifecycleId: channelLifecycle,
      name: expect.stringContaining('Channel LC'),
      phases: [
        {
          phaseId: expect.any(String),
          name: 'Test',
          sortOrder: 1,
          progressRequirement: 'AllMustComplete',
          progressRequirementErrorMode: 'NoErrorsAllowWarnings',
          progressRequirementCount: 0,
          environments: [{ environmentId: staging, environmentName: 'Staging', howToTrigger: 'Automatic' }],
        },
        {
          phaseId: expect.any(String),
          name: 'Live',
          sortOrder: 2,
          progressRequirement: 'OptionalPhase',
          progressRequirementErrorMode: 'NoErrorsAllowWarnings',
          progressRequirementCount: 0,
          environments: [{ environmentId: production, environmentName: 'Production', howToTrigger: 'Manual' }],
        },
      ],
    });
    const viaProject = await row((await ok(create({ projectId, version: '1.0.1' }))).releaseId);
    expect(viaProject.snapshot.lifecycle.lifecycleId).toBe(projectLifecycle);
    const none = await row(
      (await ok(create({ projectId: (await project([])).projectId, version: '1.0.0' }))).releaseId,
    );
    expect(none.snapshot.lifecycle).toBeNull();
  });

  it('freezes steps with template and properties, rolling groups, variables and script modules', async () => {
    const web = unique('Web');
    await upload(`${web}.1.0.0.zip`);
    const { projectId, stepIds } = await project([web, web]);
    await ok(
      t.admin.put('/api/project/step', {
        projectStepId: stepIds[1],
        propertiesJson: JSON.stringify({ Package: web, Greeting: 'hello', Extra: 5 }),
        errorAction: 'ContinueOnError',
      }),
    );
    const { rollingGroupId } = await ok(
      t.admin.post('/api/project/rolling-group', { projectId, name: 'Tier', memberStepIds: stepIds, windowSize: 2 }),
    );
    const { variableId } = await ok(
      t.admin.post('/api/project/variable', { projectId, name: 'Greeting', variableType: 'Text' }),
    );
    await ok(t.admin.post('/api/project/variable/value', { variableId, theValue: 'plain', stepFilter: [stepIds[0]] }));
    const workspaceVariable = (
      await ok(
        t.admin.post('/api/workspace-variable', {
          workspaceId: t.mainWorkspaceId,
          name: unique('Region'),
          variableType: 'Text',
        }),
      )
    ).variableId;
    await ok(t.admin.post('/api/workspace-variable/value', { variableId: workspaceVariable, theValue: 'eu' }));
    await ok(t.admin.post('/api/project/workspace-variable', { projectId, variableId: workspaceVariable }));
    const moduleId = (
      await ok(
        t.admin.post('/api/script-module', {
          workspaceId: t.mainWorkspaceId,
          name: unique('Helpers'),
          script: 'say() { echo; }',
          scriptLanguage: 'bash',
        }),
      )
    ).scriptModuleId;
    await ok(t.admin.post('/api/project/script-module', { projectId, scriptModuleId: moduleId }));

    const snapshot = (await row((await ok(create({ projectId, version: '1.0.0' }))).releaseId)).snapshot;
    expect(snapshot.v).toBe(1);
    expect(snapshot.project).toEqual({ projectId, name: expect.any(String), workspaceId: t.mainWorkspaceId });
    expect(snapshot.steps).toHaveLength(2);
    expect(snapshot.steps[1]).toEqual({
      stepId: stepIds[1],
      name: 'Step 2',
      sortOrder: 2,
      errorAction: 'ContinueOnError',
      disabled: false,
      parallelMachines: null,
      environmentIds: [],
      machineIdFilter: [],
      machineTagFilter: [],
      rollingGroupId,
      properties: { Package: web, Greeting: 'hello', Extra: '5' },
      template: {
        stepTemplateId: templateId,
        name: 'Deploy package',
        script: 'echo "#{Greeting}"',
        scriptLanguage: 'bash',
        properties: [
          { Id: 'Package', Name: 'Package', DefaultValue: '', ControlType: 'PackageSelector' },
          { Id: 'Greeting', Name: 'Greeting', DefaultValue: 'hi', ControlType: 'SingleLineText' },
        ],
      },
      packageIds: [web],
    });
    expect(snapshot.steps[0].properties).toEqual({ Package: web, Greeting: 'hi' });
    expect(snapshot.packages).toHaveLength(1);
    expect(snapshot.rollingGroups).toEqual([
      expect.objectContaining({
        rollingGroupId,
        name: 'Tier',
        windowSize: 2,
        machineOrder: 'MachineName',
        onNoTargets: 'Skip',
        memberStepIds: stepIds,
      }),
    ]);
    expect(snapshot.variables).toEqual(
      expect.arrayContaining([
        {
          variableId,
          name: 'Greeting',
          variableType: 'Text',
          source: 'project',
          values: [
            {
              value: 'plain',
              valueEncrypted: null,
              environmentsFilter: [],
              machineFilter: [],
              tagFilter: [],
              stepFilter: [stepIds[0]],
              channelFilter: [],
            },
          ],
        },
        expect.objectContaining({
          variableId: workspaceVariable,
          source: 'workspace',
          values: [expect.objectContaining({ value: 'eu' })],
        }),
      ]),
    );
    expect(snapshot.scriptModules).toEqual([
      { scriptModuleId: moduleId, name: expect.any(String), script: 'say() { echo; }', scriptLanguage: 'bash' },
    ]);
  });

  it('keeps the snapshot unchanged when the project is edited afterwards', async () => {
    const { projectId } = await project([]);
    const { variableId } = await ok(
      t.admin.post('/api/project/variable', { projectId, name: 'Color', variableType: 'Text' }),
    );
    const { variableValueId } = await ok(t.admin.post('/api/project/variable/value', { variableId, theValue: 'blue' }));
    const { projectStepId } = await ok(
      t.admin.post('/api/project/step', { projectId, name: 'Run', stepTemplateId: templateId }),
    );
    await ok(t.admin.put('/api/project/step', { projectStepId, propertiesJson: '{"Greeting":"before"}' }));
    const { releaseId } = await ok(create({ projectId, version: '1.0.0', notes: 'first' }));
    const before = await ok(details({ releaseId }));

    await ok(
      t.admin.put('/api/project/step', { projectStepId, name: 'Renamed', propertiesJson: '{"Greeting":"after"}' }),
    );
    await ok(t.admin.put('/api/project/variable/value', { variableValueId, theValue: 'red' }));
    await ok(t.admin.post('/api/project/step', { projectId, name: 'Added later', stepTemplateId: templateId }));
    await ok(t.admin.put('/api/step-template', { stepTemplateId: templateId, script: 'echo changed' }));
    try {
      const after = await ok(details({ releaseId }));
      expect(after.snapshot).toEqual(before.snapshot);
      expect(after.snapshot.steps.map((s: { name: string }) => s.name)).toEqual(['Run']);
      expect(after.snapshot.steps[0].properties.Greeting).toBe('before');
      expect(after.snapshot.steps[0].template.script).toBe('echo "#{Greeting}"');
      expect(after.snapshot.variables[0].values[0].value).toBe('blue');
      expect(after.notes).toBe('first');
    } finally {
      await ok(t.admin.put('/api/step-template', { stepTemplateId: templateId, script: 'echo "#{Greeting}"' }));
    }
  });

  it('keeps Sensitive values sealed in the stored row and out of the details response', async () => {
    const { projectId } = await project([]);
    const { variableId } = await ok(
      t.admin.post('/api/project/variable', { projectId, name: 'Password', variableType: 'Sensitive' }),
    );
    await ok(t.admin.post('/api/project/variable/value', { variableId, theValue: 's3cret-value' }));
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));

    const stored = await row(releaseId);
    expect(JSON.stringify(stored)).not.toContain('s3cret-value');
    const value = stored.snapshot.variables[0].values[0];
    expect(value.value).toBeNull();
    expect(t.deps.secrets.decrypt(value.valueEncrypted)).toBe('s3cret-value');

    const read = await details({ releaseId });
    expect(read.text).not.toContain('s3cret-value');
    expect(read.text).not.toContain(value.valueEncrypted);
    expect(read.body.snapshot.variables[0].values[0]).toEqual({
      value: null,
      environmentsFilter: [],
      machineFilter: [],
      tagFilter: [],
      stepFilter: [],
      channelFilter: [],
    });
  });
});

describe('POST /api/release: access and input', () => {
  it('refuses an account without CreateRelease, or limited to another project, with 401/2003', async () => {
    const { projectId } = await project([]);
    const other = await project([]);
    for (const client of [
      await t.account([{ role: 'View' }, { role: 'Deploy' }]),
      await t.account([{ role: 'CreateRelease', projectIds: [other.projectId] }]),
    ]) {
      const response = await create({ projectId, version: '1.0.0' }, client);
      expect(response.status).toBe(401);
      expect(response.body).toMatchObject({ errorcode: 2003, error: expect.stringContaining('CreateRelease') });
    }
    const releaser = await t.account([{ role: 'CreateRelease', projectIds: [projectId] }]);
    await ok(create({ projectId, version: '1.0.0' }, releaser));
    expect(await t.db('releases').where({ project_id: projectId })).toHaveLength(1);
  });

  it("refuses another workspace's project, a deleted project and an unknown ID with 400", async () => {
    const foreign = await project([], { workspaceId: await t.workspace() });
    const deleted = await project([]);
    await ok(t.admin.delete('/api/project', { projectId: deleted.projectId }));
    const releaser = await t.account([{ role: 'CreateRelease' }]);
    for (const projectId of [foreign.projectId, deleted.projectId, newId()]) {
      expectRefused(await create({ projectId, version: '1.0.0' }, releaser), 'projectId');
    }
    expectRefused(await create({ projectId: deleted.projectId, version: '1.0.0' }), 'projectId');
  });

  it('refuses wrong types with 400', async () => {
    const { projectId } = await project([]);
    for (const body of [
      { projectId, version: 100 },
      { projectId, version: '1.0.0', packageVersions: ['a'] },
      { projectId, version: '1.0.0', packageVersions: { a: 1 } },
      { projectId, version: '1.0.0', ignoreDefaultChannel: 'yes' },
      { projectId, version: '1.0.0', notes: 'x'.repeat(100_001) },
      { projectId: 5, version: '1.0.0' },
    ]) {
      const response = await create(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
    }
    expect(await t.db('releases').where({ project_id: projectId })).toEqual([]);
  });

  it('binds projectid spelled in lower case and accepts null optional fields', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(
      create({ projectid: projectId, Version: '1.0.0', channelName: null, notes: null, packageVersions: null }),
    );
    expect((await row(releaseId)).project_id).toBe(projectId);
  });

  it('calls onReleaseCreated after the release is committed, and answers 200 even when it fails', async () => {
    const { projectId } = await project([]);
    const seen: string[] = [];
    t.app.deps.onReleaseCreated = async (release) => {
      // The release as stored, and committed: a read on another connection finds it.
      expect(release.version).toBe('4.0.0');
      expect(release.snapshot).toEqual((await row(release.id)).snapshot);
      expect(release.createdUtc).toEqual((await row(release.id)).created_at);
      seen.push((await row(release.id)).version);
      throw new Error('engine down');
    };
    try {
      const { releaseId } = await ok(create({ projectId, version: '4.0.0' }));
      // Called once the release's transaction (with its audit event) has committed.
      await waitFor(() => seen.length > 0, { description: 'onReleaseCreated' });
      expect(seen).toEqual(['4.0.0']);
      expect(await row(releaseId)).toBeDefined();
    } finally {
      t.app.deps.onReleaseCreated = undefined;
    }
  });
});

describe('GET /api/release', () => {
  it('pages through releases newest first with notes and package versions', async () => {
    const web = unique('Web');
    await upload(`${web}.1.0.0.zip`);
    const { projectId } = await project([web]);
    const ids: string[] = [];
    for (const version of ['1.0.0', '3.0.0', '2.0.0'])
      ids.push((await ok(create({ projectId, version, notes: `notes ${version}` }))).releaseId);

    const first = await ok(t.admin.get('/api/release', { projectId, take: 2 }));
    expect(first.totalCount).toBe(3);
    expect(first.releases.map((r: { version: string }) => r.version)).toEqual(['2.0.0', '3.0.0']);
    expect(first.releases[0]).toEqual({
      releaseId: ids[2],
      projectId,
      version: '2.0.0',
      channelName: null,
      notes: 'notes 2.0.0',
      packageVersions: { [web]: '1.0.0' },
      createdUtc: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const second = await ok(t.admin.get('/api/release', { projectId, skip: 2, take: 2 }));
    expect(second.releases.map((r: { releaseId: string }) => r.releaseId)).toEqual([ids[0]]);
  });

  it("refuses another workspace's project with 400 and an account without View with 401", async () => {
    const { projectId } = await project([]);
    const outsider = await t.account([{ role: 'View' }], await t.workspace());
    expectRefused(await outsider.get('/api/release', { projectId }), 'projectId');
    const releaser = await t.account([{ role: 'CreateRelease' }]);
    const refused = await releaser.get('/api/release', { projectId });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
    expect((await t.admin.get('/api/release', {})).status).toBe(400);
  });
});

describe('GET /api/release/details', () => {
  it('finds a release by SemVer-equivalent version, the exact spelling first', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '6.1.0' }));
    const build = await ok(create({ projectId, version: '7.0.0+build.3' }));
    expect((await ok(details({ projectId, version: '6.1' }))).releaseId).toBe(releaseId);
    expect((await ok(details({ projectId, version: '6.1.0' }))).releaseId).toBe(releaseId);
    expect((await ok(details({ projectId, version: '7' }))).releaseId).toBe(build.releaseId);
    expect((await ok(details({ projectId, version: '7.0.0+build.3' }))).releaseId).toBe(build.releaseId);
    expectRefused(await details({ projectId, version: '6' }), 'version', 'not found');
    expectRefused(await details({ projectId, version: 'latest' }), 'version');
  });

  it('returns the release fields with the snapshot', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '1.2.3', notes: 'n' }));
    const read = await ok(details({ releaseId }));
    expect(read).toMatchObject({
      releaseId,
      projectId,
      version: '1.2.3',
      channelName: null,
      channelId: null,
      notes: 'n',
      packageVersions: {},
    });
    expect(read.snapshot).toMatchObject({
      project: { projectId },
      channel: null,
      lifecycle: null,
      steps: [],
      packages: [],
    });
  });

  it('shows why each environment is unavailable along the lifecycle', async () => {
    const dev = (await ok(t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: unique('Dev') })))
      .environmentId;
    const qa = (
      await ok(t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: unique('QA'), enabled: false }))
    ).environmentId;
    const prod = (await ok(t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: unique('Prod') })))
      .environmentId;
    const lifecycleId = (
      await ok(
        t.admin.post('/api/lifecycle', {
          workspaceId: t.mainWorkspaceId,
          name: unique('Path'),
          phases: [
            {
              name: 'Development',
              environments: [{ environmentId: dev, howToTrigger: 'Automatic' }, { environmentId: qa }],
            },
            { name: 'Production', environments: [{ environmentId: prod }] },
          ],
        }),
      )
    ).lifecycleId;
    const { projectId } = await project([], { lifecycleId });
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));

    const read = await ok(details({ releaseId }));
    const [development, production] = read.progression.phases;
    expect(development).toMatchObject({ name: 'Development', sortOrder: 1, reached: true, complete: false });
    expect(development.environments).toEqual([
      {
        environmentId: dev,
        environmentName: expect.any(String),
        available: true,
        reason: null,
        howToTrigger: 'Automatic',
      },
      {
        environmentId: qa,
        environmentName: expect.any(String),
        available: false,
        reason: expect.stringContaining('disabled'),
        howToTrigger: 'Manual',
      },
    ]);
    expect(production).toMatchObject({ name: 'Production', reached: false, complete: false });
    expect(production.environments[0]).toMatchObject({
      environmentId: prod,
      available: false,
      reason: expect.stringContaining("has not reached phase 'Production'"),
    });
    const byId = new Map(read.progression.environments.map((e: { environmentId: string }) => [e.environmentId, e]));
    expect(byId.get(prod)).toMatchObject({
      available: false,
      reason: expect.stringContaining("phase 'Development' is not complete"),
    });
    expect(byId.get(dev)).toMatchObject({ available: true, reason: null });
    const staging = read.progression.environments.find(
      (e: { environmentName: string }) => e.environmentName === 'Staging',
    );
    expect(staging).toMatchObject({ available: false, reason: expect.stringContaining('not in the lifecycle') });

    // Both Development environments complete (QA enabled again): Production becomes available.
    await ok(t.admin.put('/api/environment', { environmentId: qa, enabled: true }));
    for (const environmentId of [dev, qa]) {
      const id = newId();
      await t.deps.store.deployments.insert([
        manualDeployment({
          id,
          workspaceId: t.mainWorkspaceId,
          projectId,
          releaseId,
          environmentId,
          environmentName: 'x',
        }),
      ]);
      await t.deps.store.deployments.update(id, { status: 'Completed' }, new Date());
    }
    const after = await ok(details({ releaseId }));
    expect(
      after.progression.phases.map((p: { reached: boolean; complete: boolean }) => [p.reached, p.complete]),
    ).toEqual([
      [true, true],
      [true, false],
    ]);
    expect(
      after.progression.environments.find((e: { environmentId: string }) => e.environmentId === prod),
    ).toMatchObject({ available: true, reason: null });
  });

  it('reports every enabled environment available when the release has no lifecycle', async () => {
    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    const read = await ok(details({ releaseId }));
    expect(read.progression.phases).toBeNull();
    const names = read.progression.environments
      .filter((e: { available: boolean }) => e.available)
      .map((e: { environmentName: string }) => e.environmentName);
    expect(names).toEqual(expect.arrayContaining(['Staging', 'Production']));
  });

  it('refuses unknown or foreign releases, missing parameters and accounts without View', async () => {
    const foreignWorkspace = await t.workspace();
    const foreign = await project([], { workspaceId: foreignWorkspace });
    const foreignRelease = (await ok(create({ projectId: foreign.projectId, version: '1.0.0' }))).releaseId;
    const viewer = await t.account([{ role: 'View' }]);
    expectRefused(await details({ releaseId: foreignRelease }, viewer), 'releaseId');
    expectRefused(await details({ projectId: foreign.projectId, version: '1.0.0' }, viewer), 'projectId');
    expectRefused(await details({ releaseId: newId() }), 'releaseId');
    expect((await details({})).status).toBe(400);
    expect((await details({ projectId: foreign.projectId })).status).toBe(400);

    const { projectId } = await project([]);
    const { releaseId } = await ok(create({ projectId, version: '1.0.0' }));
    expect((await details({ releaseId }, viewer)).status).toBe(200);
    const limited = await t.account([{ role: 'View', projectIds: [(await project([])).projectId] }]);
    const refused = await details({ releaseId }, limited);
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);
  });
});
