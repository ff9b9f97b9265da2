/**
 * Deploy, promote, cancel and the deployment reads over the API (spec §4.2–4.5, §7.3). The engine
 * is not running here: these tests pin validation, permissions and shapes; the engine tests and
 * the e2e suite run deployments to the end.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../../services/core/index.ts';
import { authenticate, getDeployment } from '../../../services/domain/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';
import { environmentId } from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let projectId: string;
let releaseId: string;
let staging: string;
let production: string;

beforeAll(async () => {
  t = await testApp();
  staging = await environmentId(t, 'Staging');
  production = await environmentId(t, 'Production');
  const lifecycles = await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId });
  const lifecycleId = lifecycles.body.lifecycles.find(
    (l: { name: string }) => l.name === 'Default Lifecycle',
  ).lifecycleId;
  projectId = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Deployable', lifecycleId }))
    .body.projectId;
  const template = await t.admin.post('/api/step-template', {
    workspaceId: t.mainWorkspaceId,
    name: 'echo',
    script: 'echo hi',
    scriptLanguage: 'bash',
  });
  await t.admin.post('/api/project/step', { projectId, name: 'Say hi', stepTemplateId: template.body.stepTemplateId });
  releaseId = (await t.admin.post('/api/release', { projectId, version: '1.2.0' })).body.releaseId;
  await t.admin.post('/api/release', { projectId, version: '1.10.0' });
  await t.admin.post('/api/release', { projectId, version: '1.9.0' });
});

describe('POST /api/release/deploy', () => {
  it('creates a Queued deployment per environment, accepting names, objects and the obsolete environmentName', async () => {
    const byName = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(byName.status, byName.text).toBe(200);
    expect(byName.body.deploymentIds).toHaveLength(1);
    const row = await t.db('deployments').where({ id: byName.body.deploymentIds[0] }).first();
    expect(row).toMatchObject({ status: 'Queued', environment_id: staging, release_id: releaseId });
    const byObject = await t.admin.post('/api/release/deploy', {
      releaseId,
      environments: [{ environmentName: 'staging', machineMode: 'All' }],
    });
    expect(byObject.status).toBe(200);
    const obsolete = await t.admin.post('/api/release/deploy', { ReleaseId: releaseId, EnvironmentName: 'Staging' });
    expect(obsolete.status).toBe(200);
  });

  it('wakes the engine after commit with what a deployment due now validates by, and one scheduled by its ID', async () => {
    const woken: unknown[] = [];
    t.app.deps.wakeDeployments = async (deployments) => void woken.push(...deployments);
    try {
      const now = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
      expect(now.status, now.text).toBe(200);
      const later = await t.admin.post('/api/release/deploy', {
        releaseId,
        environments: ['Staging'],
        deploymentDateUnixMillis: Date.now() + 3_600_000,
      });
      expect(later.status, later.text).toBe(200);
      expect(woken).toEqual([
        {
          deploymentId: now.body.deploymentIds[0],
          releaseId,
          workspaceId: t.mainWorkspaceId,
          environmentId: staging,
        },
        later.body.deploymentIds[0],
      ]);
    } finally {
      t.app.deps.wakeDeployments = undefined;
    }
  });

  it('refuses an environment the release has not reached, naming it', async () => {
    const response = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Production'] });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('Production');
    expect(response.body.error).toContain("phase 'Staging' is not complete");
  });

  it('refuses a disabled environment, unknown environments, unknown phases, unknown steps and no target at all', async () => {
    const qa = (await t.admin.post('/api/environment', { workspaceId: t.mainWorkspaceId, name: 'QA', enabled: false }))
      .body.environmentId;
    expect(qa).toBeTruthy();
    const cases = [
      { releaseId, environments: ['QA'] },
      { releaseId, environments: ['Nowhere'] },
      { releaseId, phaseName: 'No such phase' },
      { releaseId, environments: ['Staging'], excludeStepNames: ['Not a step'] },
      { releaseId },
      { releaseId: 'unknown', environments: ['Staging'] },
    ];
    for (const body of cases) {
      const response = await t.admin.post('/api/release/deploy', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.errorcode).toBe(3001);
    }
  });

  it('deploys to every environment of a phase', async () => {
    const response = await t.admin.post('/api/release/deploy', { releaseId, phaseName: 'Staging' });
    expect(response.status).toBe(200);
    const rows = await t.db('deployments').whereIn('id', response.body.deploymentIds);
    expect(rows.map((r) => r.environment_id)).toEqual([staging]);
  });

  it('refuses an account that may not deploy to the environment, listing the environment IDs', async () => {
    const limited = await t.account([{ role: 'Deploy', environmentIds: [production] }, { role: 'View' }]);
    const response = await limited.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(response.status).toBe(401);
    expect(response.body.errorcode).toBe(2003);
    expect(response.body.error).toContain(staging);
  });

  it('answers 409 with resourceUsageErrors when the queue is full, and creates nothing', async () => {
    await t.admin.put('/api/organization/settings', { maxQueuedDeployments: 1 });
    const before = await t.db('deployments').count({ n: '*' });
    const response = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    await t.admin.put('/api/organization/settings', { maxQueuedDeployments: 1000 });
    expect(response.status).toBe(409);
    expect(response.body.resourceUsageErrors[0]).toMatchObject({ resource: 'queuedDeployments', limit: 1 });
    expect(await t.db('deployments').count({ n: '*' })).toEqual(before);
  });
});

describe('POST /api/release/promote', () => {
  it('picks the highest SemVer release when no version is given', async () => {
    const response = await t.admin.post('/api/release/promote', { projectId, environments: ['Staging'] });
    expect(response.status, response.text).toBe(200);
    expect(response.body.deploymentIds).toEqual([response.body.deploymentId]);
    const row = await t
      .db('deployments as d')
      .join('releases as r', 'r.id', 'd.release_id')
      .where('d.id', response.body.deploymentId)
      .first('r.version');
    expect(row.version).toBe('1.10.0');
  });

  it('matches the version exactly: 1.2 does not find 1.2.0', async () => {
    expect(
      (await t.admin.post('/api/release/promote', { projectId, version: '1.2', environments: ['Staging'] })).status,
    ).toBe(400);
    expect(
      (await t.admin.post('/api/release/promote', { projectId, version: '1.2.0', environments: ['Staging'] })).status,
    ).toBe(200);
  });

  it('refuses an unknown project and a project without releases', async () => {
    expect((await t.admin.post('/api/release/promote', { projectId: 'nope', environments: ['Staging'] })).status).toBe(
      400,
    );
    const empty = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Empty' })).body
      .projectId;
    const response = await t.admin.post('/api/release/promote', { projectId: empty, environments: ['Staging'] });
    expect(response.status).toBe(400);
    expect(response.body.error).toContain('no release');
  });
});

describe('GET /api/deployment', () => {
  it('returns the status in PascalCase with exact ticks, and the logs', async () => {
    const id = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds[0];
    await t.deps.store.transaction((tx) =>
      tx.deploymentLogs.append(
        id,
        [
          { level: 'Information', data: 'one' },
          { level: 'Warning', data: 'two' },
        ],
        new Date(),
      ),
    );
    const response = await t.admin.raw({ method: 'GET', path: `/api/deployment?deploymentid=${id}&skipLogs=False` });
    expect(response.status).toBe(200);
    const body = response.body;
    expect(body.status).toMatchObject({
      Status: 'Queued',
      ErrorCount: 0,
      WarningCount: 1,
      CancellationRequestedDate: null,
      CompleteDate: null,
    });
    expect(body.logs.map((l: { Data: string; LogLevel: string }) => [l.Data, l.LogLevel])).toEqual([
      ['one', 'Information'],
      ['two', 'Warning'],
    ]);
    const rawTick = /"CreatedUtcTick":(\d+)/.exec(response.text)![1]!;
    const stored = await t.db('deployment_logs').where({ deployment_id: id, data: 'one' }).first('tick');
    expect(rawTick).toBe(stored.tick);
    expect(
      new RegExp(
        `"LastLogDateTick":${(await t.db('deployments').where({ id }).first('last_log_tick')).last_log_tick}[,}]`,
      ).test(response.text),
    ).toBe(true);
    expect(body.status.LastLogDate).toMatch(/\+00:00$/);
    const after = await t.admin.raw({
      method: 'GET',
      path: `/api/deployment?deploymentId=${id}&getLogsAfter=${rawTick}`,
    });
    expect(after.body.logs.map((l: { Data: string }) => l.Data)).toEqual(['two']);
  });

  it('shows the deployment and its lines of one instant, read in one statement, while lines commit', async () => {
    const id = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds[0];
    const { store } = t.deps;
    await store.deploymentLogs.append(id, [{ level: 'Information', data: 'line 0' }], new Date());
    const principal = await authenticate(t.deps, ADMIN.id, ADMIN.key);
    // One statement, so one snapshot: a status and the lines beside it cannot come from two instants.
    const statements: string[] = [];
    const count = (query: { sql: string }) => statements.push(query.sql);
    t.db.on('query', count);
    const first = await getDeployment(t.deps, principal, { deploymentId: id });
    t.db.off('query', count);
    expect(statements).toHaveLength(1);
    expect(first.logs!.map((l) => l.data)).toEqual(['line 0']);
    // And while lines commit: every line up to the LastLogDateTick shown, none past it.
    let writing = true;
    const writer = (async () => {
      for (let i = 1; writing; i++)
        await store.deploymentLogs.append(id, [{ level: 'Information', data: `line ${i}` }], new Date());
    })();
    try {
      for (let read = 0; read < 40; read++) {
        const view = await getDeployment(t.deps, principal, { deploymentId: id });
        expect(view.logs!.at(-1)!.tick).toBe(view.deployment.lastLogTick);
        expect(view.logs!.map((l) => l.data)).toEqual(view.logs!.map((_, i) => `line ${i}`));
      }
    } finally {
      writing = false;
      await writer;
    }
  });

  it('caps a page near 1 MiB however long the lines, and pages on with getLogsAfter without loss', async () => {
    const id = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds[0];
    const line = (i: number) => `${String(i).padStart(4, '0')} ${'x'.repeat(4091)}`;
    await t.deps.store.deploymentLogs.append(
      id,
      Array.from({ length: 600 }, (_, i) => ({ level: 'Information' as const, data: line(i) })),
      new Date(),
    );
    const seen: string[] = [];
    const sizes: number[] = [];
    let after = '';
    for (let pages = 0; pages < 10; pages++) {
      const response = await t.admin.raw({
        method: 'GET',
        path: `/api/deployment?deploymentId=${id}${after ? `&getLogsAfter=${after}` : ''}`,
      });
      expect(response.status).toBe(200);
      const logs = response.body.logs as Array<{ Data: string }>;
      if (logs.length === 0) break;
      sizes.push(response.text.length);
      seen.push(...logs.map((l) => l.Data));
      after = [...response.text.matchAll(/"CreatedUtcTick":(\d+)/g)].at(-1)![1]!;
    }
    expect(seen).toEqual(Array.from({ length: 600 }, (_, i) => line(i)));
    // 2.5 MB of lines: three pages, none much above 1 MiB (it was one 2.5 MB page).
    expect(sizes.length).toBeGreaterThanOrEqual(3);
    for (const size of sizes) expect(size).toBeLessThan(1.1 * 1024 * 1024);
  });

  it('refuses an unknown deployment and a getLogsAfter that is not an integer', async () => {
    expect((await t.admin.get('/api/deployment', { deploymentId: newId() })).status).toBe(400);
    const id = (await t.admin.get('/api/deployment/list', { projectId })).body.deployments[0].deploymentId;
    expect((await t.admin.get('/api/deployment', { deploymentId: id, getLogsAfter: '12.5' })).status).toBe(400);
    expect((await t.admin.get('/api/deployment', { deploymentId: id, getLogsAfter: '' })).status).toBe(200);
  });
});

describe('DELETE /api/project', () => {
  it("asks the project's deployments in progress to cancel, and leaves finished ones as they are", async () => {
    const lifecycles = await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId });
    const lifecycleId = lifecycles.body.lifecycles.find(
      (l: { name: string }) => l.name === 'Default Lifecycle',
    ).lifecycleId;
    const doomed = (
      await t.admin.post('/api/project', {
        workspaceId: t.mainWorkspaceId,
        name: 'Deleted while deploying',
        lifecycleId,
      })
    ).body.projectId;
    const template = await t.admin.post('/api/step-template', {
      workspaceId: t.mainWorkspaceId,
      name: 'echo doomed',
      script: 'echo hi',
      scriptLanguage: 'bash',
    });
    await t.admin.post('/api/project/step', {
      projectId: doomed,
      name: 'Say hi',
      stepTemplateId: template.body.stepTemplateId,
    });
    const release = (await t.admin.post('/api/release', { projectId: doomed, version: '1.0.0' })).body.releaseId;
    const [finished] = (await t.admin.post('/api/release/deploy', { releaseId: release, environments: ['Staging'] }))
      .body.deploymentIds;
    await t.deps.store.deployments.update(finished, { status: 'Completed', completedUtc: new Date() }, new Date());
    const [running] = (await t.admin.post('/api/release/deploy', { releaseId: release, environments: ['Staging'] }))
      .body.deploymentIds;
    const [elsewhere] = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds;

    expect((await t.admin.delete('/api/project', { projectId: doomed })).status).toBe(200);
    const get = (id: string) => t.deps.store.deployments.get(id);
    expect((await get(running))?.cancellationRequestedUtc).toBeInstanceOf(Date);
    expect(await get(finished)).toMatchObject({ status: 'Completed', cancellationRequestedUtc: null });
    expect((await get(elsewhere))?.cancellationRequestedUtc).toBeNull(); // another project's
  });
});

describe('POST /api/deployment/cancel', () => {
  it('records the cancellation request and refuses a finished deployment', async () => {
    const id = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds[0];
    const response = await t.admin.post('/api/deployment/cancel', { deploymentId: id });
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
    expect((await t.db('deployments').where({ id }).first()).cancellation_requested_at).not.toBeNull();
    await t.db('deployments').where({ id }).update({ status: 'Completed' });
    expect((await t.admin.post('/api/deployment/cancel', { deploymentId: id })).status).toBe(400);
  });
});

describe('GET /api/deployment/list', () => {
  it('pages newest first and reports only changes after a tick', async () => {
    const all = await t.admin.get('/api/deployment/list', { projectId, take: 2 });
    expect(all.status).toBe(200);
    expect(all.body.deployments).toHaveLength(2);
    expect(all.body.totalCount).toBeGreaterThan(2);
    const tick = /"lastChangeTick":(\d+)}$/.exec(all.text)![1]!;
    const none = await t.admin.get('/api/deployment/list', { projectId, changedAfterTick: tick });
    expect(none.body.deployments).toEqual([]);
    const id = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
      .deploymentIds[0];
    const changed = await t.admin.get('/api/deployment/list', { projectId, changedAfterTick: tick });
    expect(changed.body.deployments.map((d: { deploymentId: string }) => d.deploymentId)).toEqual([id]);
  });

  it('finds deployments by a SemVer-equivalent release version and needs a filter', async () => {
    const byVersion = await t.admin.get('/api/deployment/list', { projectId, version: '1.10' });
    expect(byVersion.status).toBe(200);
    expect(byVersion.body.deployments.every((d: { version: string }) => d.version === '1.10.0')).toBe(true);
    expect(byVersion.body.totalCount).toBeGreaterThan(0);
    expect((await t.admin.get('/api/deployment/list', {})).status).toBe(400);
  });
});
