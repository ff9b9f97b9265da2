/**
 * The dashboard's page reads (issue #11): what each shows, and that they are scoped and
 * authorized exactly like the API — project-limited View roles see their projects only, another
 * workspace's IDs are unknown, and the actions an account may not take come with the reason.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { authenticate, followWorkspace } from '../../../services/domain/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';
import { archiveFor, multipartBody } from '../packages/archives.ts';

let t: TestContext;
let lifecycleId: string;
let alpha: string;
let beta: string;
let releaseId: string;
let deploymentId: string;

beforeAll(async () => {
  t = await testApp();
  lifecycleId = (await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId })).body.lifecycles[0]
    .lifecycleId;
  alpha = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Alpha <i>', lifecycleId })).body
    .projectId;
  beta = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Beta', lifecycleId })).body
    .projectId;
  releaseId = (await t.admin.post('/api/release', { projectId: alpha, version: '1.0.0' })).body.releaseId;
  deploymentId = (await t.admin.post('/api/release/deploy', { releaseId, environments: ['Staging'] })).body
    .deploymentIds[0];
  const variable = await t.admin.post('/api/project/variable', {
    projectId: alpha,
    name: 'Password',
    variableType: 'Sensitive',
  });
  await t.admin.post('/api/project/variable/value', { variableId: variable.body.variableId, theValue: 'hunter2' });
});

describe('GET /api/dashboard/overview', () => {
  it('shows each cell’s latest deployment with who asked and why it waits', async () => {
    const overview = await t.admin.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId });
    expect(overview.status).toBe(200);
    expect(overview.body.environments.map((e: { name: string }) => e.name)).toEqual(['Staging', 'Production']);
    expect(overview.body.projects.map((p: { name: string }) => p.name)).toEqual(['Alpha <i>', 'Beta']);
    const [staging, production] = overview.body.projects[0].cells;
    expect(staging.deployment).toMatchObject({
      deploymentId,
      version: '1.0.0',
      status: 'Queued',
      requestedBy: 'Admin',
      waitReason: 'Queued: waiting for a control plane to validate it',
    });
    expect(production.deployment).toBeNull();
    const filtered = await t.admin.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId, search: 'bet' });
    expect(filtered.body.projects.map((p: { name: string }) => p.name)).toEqual(['Beta']);
    expect(filtered.body.totalCount).toBe(1);
  });

  it('says an AwaitingSlot cell waits for the running deployment of the same project and environment', async () => {
    const running = (await t.admin.post('/api/release', { projectId: beta, version: '3.0.0' })).body.releaseId;
    const first = (await t.admin.post('/api/release/deploy', { releaseId: running, environments: ['Staging'] })).body
      .deploymentIds[0];
    const second = (await t.admin.post('/api/release', { projectId: beta, version: '3.1.0' })).body.releaseId;
    const waiting = (await t.admin.post('/api/release/deploy', { releaseId: second, environments: ['Staging'] })).body
      .deploymentIds[0];
    await t.db('deployments').where({ id: first }).update({ status: 'Running' });
    await t.db('deployments').where({ id: waiting }).update({ status: 'AwaitingSlot' });
    const overview = await t.admin.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId, search: 'Beta' });
    expect(overview.body.projects[0].cells[0].deployment).toMatchObject({
      version: '3.1.0',
      status: 'AwaitingSlot',
      waitReason: 'Waiting for 3.0.0 to finish in Staging (one deployment per project and environment at a time)',
    });
  });

  it('says why a Queued cell held at its gate waits, as the engine recorded it (not "waiting for a control plane")', async () => {
    const gamma = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Gamma', lifecycleId }))
      .body.projectId;
    const held = (await t.admin.post('/api/release', { projectId: gamma, version: '1.0.0' })).body.releaseId;
    const gated = (await t.admin.post('/api/release/deploy', { releaseId: held, environments: ['Staging'] })).body
      .deploymentIds[0];
    // What the engine's holdAtGate writes for an environment that needs one approval.
    await t
      .db('deployments')
      .where({ id: gated })
      .update({ gated: true, waiting_reason: 'awaiting approval (0 of 1)' });
    const overview = await t.admin.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId, search: 'Gamma' });
    expect(overview.body.projects[0].cells[0].deployment).toMatchObject({
      deploymentId: gated,
      status: 'Queued',
      waitReason: 'Waiting: awaiting approval (0 of 1)',
    });
    const project = await t.admin.get('/api/dashboard/project', { projectId: gamma });
    expect(project.body.releases[0].environments[0].deployment.waitReason).toBe('Waiting: awaiting approval (0 of 1)');
  });

  it('shows a project-limited account only its projects, and another workspace as unknown', async () => {
    const limited = await t.account([{ role: 'View', projectIds: [beta] }]);
    const overview = await limited.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId });
    expect(overview.body.projects.map((p: { projectId: string }) => p.projectId)).toEqual([beta]);
    expect(overview.text).not.toContain(alpha);
    const other = await t.workspace();
    const stranger = await t.account([{ role: 'View' }], other);
    const refused = await stranger.get('/api/dashboard/overview', { workspaceId: t.mainWorkspaceId });
    expect(refused.status).toBe(400);
    expect(refused.body.errorcode).toBe(3001);
    const own = await stranger.get('/api/dashboard/overview', { workspaceId: other });
    expect(own.body.workspaces.map((w: { workspaceId: string }) => w.workspaceId)).toEqual([other]);
    for (const [url, query] of [
      ['/api/dashboard/project', { projectId: alpha }],
      ['/api/dashboard/deployment', { deploymentId }],
      ['/api/dashboard/release-form', { projectId: alpha }],
      ['/api/dashboard/machines', { workspaceId: t.mainWorkspaceId }],
      ['/api/dashboard/topology', { workspaceId: t.mainWorkspaceId }],
    ] as const) {
      const answer = await stranger.get(url, query);
      expect([answer.status, answer.body.errorcode], url).toEqual([400, 3001]);
    }
    const limitedProject = await limited.get('/api/dashboard/project', { projectId: alpha });
    expect([limitedProject.status, limitedProject.body.errorcode]).toEqual([401, 2003]);
  });
});

describe('GET /api/dashboard/project', () => {
  it("gives each release's environments the lifecycle's availability and the account's permission", async () => {
    const viewer = await t.account([{ role: 'View' }]);
    const page = await viewer.get('/api/dashboard/project', { projectId: alpha });
    expect(page.status).toBe(200);
    expect(page.body.project).toMatchObject({ name: 'Alpha <i>', lifecycleName: 'Default Lifecycle' });
    const [staging, production] = page.body.releases[0].environments;
    expect(staging).toMatchObject({ available: true, reason: null, deploy: { allowed: false } });
    expect(staging.deploy.reason).toBe('Your account lacks the Deploy role here');
    expect(production).toMatchObject({
      available: false,
      reason: "The release has not reached phase 'Production': phase 'Staging' is not complete",
    });
    expect(page.body.createRelease.allowed).toBe(false);
    const deployer = await t.account([
      { role: 'View' },
      { role: 'Deploy', environmentIds: [production.environmentId] },
    ]);
    const mixed = await deployer.get('/api/dashboard/project', { projectId: alpha });
    expect(mixed.body.releases[0].environments.map((e: { deploy: { allowed: boolean } }) => e.deploy.allowed)).toEqual([
      false,
      true,
    ]);
  });
});

describe('GET /api/dashboard/release-form', () => {
  it("offers the project's packages with the feed's versions, highest SemVer first, and the next version", async () => {
    const template = await t.admin.post('/api/step-template', {
      workspaceId: t.mainWorkspaceId,
      name: 'Ship it',
      script: 'true',
      scriptLanguage: 'bash',
      propertiesRaw: JSON.stringify([
        { Id: 'Package', Name: 'Package', DefaultValue: '', ControlType: 'PackageSelector' },
      ]),
    });
    const step = await t.admin.post('/api/project/step', {
      projectId: beta,
      name: 'Ship',
      stepTemplateId: template.body.stepTemplateId,
    });
    await t.admin.put('/api/project/step', {
      projectStepId: step.body.projectStepId,
      propertiesJson: JSON.stringify({ Package: 'Shop.Web' }),
    });
    for (const fileName of ['Shop.Web.1.9.0.zip', 'Shop.Web.1.10.0.zip', 'Other.1.0.0.zip']) {
      const data = await archiveFor(fileName, [{ name: 'run.sh', data: 'echo\n' }]);
      const { payload, headers } = multipartBody([
        { name: 'workspaceId', value: t.mainWorkspaceId },
        { name: 'PackageFile', file: { fileName, data } },
      ]);
      const uploaded = await t.admin.raw({ method: 'POST', path: '/api/packagestore/package', payload, headers });
      expect(uploaded.status, uploaded.text).toBe(200);
    }
    await t.admin.post('/api/project/channel', { projectId: beta, name: 'Stable', isDefault: true });
    const form = await t.admin.get('/api/dashboard/release-form', { projectId: beta });
    expect(form.status).toBe(200);
    expect(form.body.packages).toEqual([{ packageId: 'Shop.Web', versions: ['1.10.0', '1.9.0'] }]);
    expect(form.body.channels).toEqual([expect.objectContaining({ name: 'Stable', isDefault: true })]);
    expect(form.body.nextVersion).toBe('3.1.1');
    expect(form.body.createRelease).toEqual({ allowed: true, reason: null });
  });
});

describe('GET /api/dashboard/deployment, machines, topology', () => {
  it('reads a deployment with its steps and whether the account may cancel it', async () => {
    const page = await t.admin.get('/api/dashboard/deployment', { deploymentId });
    expect(page.body.deployment).toMatchObject({
      projectName: 'Alpha <i>',
      version: '1.0.0',
      status: 'Queued',
      requestedBy: 'Admin',
    });
    expect(page.body.cancel).toEqual({ allowed: true, reason: null });
    const viewer = await t.account([{ role: 'View' }]);
    expect((await viewer.get('/api/dashboard/deployment', { deploymentId })).body.cancel.allowed).toBe(false);
  });

  it('filters machines by name and status on the server', async () => {
    for (const name of ['db-1', 'web-1', 'web-2'])
      await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name, environmentIds: [] });
    const web = await t.admin.get('/api/dashboard/machines', { workspaceId: t.mainWorkspaceId, search: 'WEB' });
    expect(web.body.machines.map((m: { name: string }) => m.name)).toEqual(['web-1', 'web-2']);
    const pending = await t.admin.get('/api/dashboard/machines', {
      workspaceId: t.mainWorkspaceId,
      status: 'Pending',
      take: 1,
    });
    expect(pending.body.totalCount).toBe(3);
    expect(pending.body.machines).toHaveLength(1);
    const online = await t.admin.get('/api/dashboard/machines', { workspaceId: t.mainWorkspaceId, status: 'Online' });
    expect(online.body.machines).toEqual([]);
    expect(web.body.addMachine).toEqual({ allowed: true, reason: null });
  });

  it('shows the topology with Sensitive values masked, and what each environment requires', async () => {
    const production = (
      await t.admin.get('/api/environment', { workspaceId: t.mainWorkspaceId })
    ).body.environments.find((e: { name: string }) => e.name === 'Production');
    await t.admin.put('/api/environment', { environmentId: production.environmentId, requiredApprovals: 2 });
    const topology = await t.admin.get('/api/dashboard/topology', { workspaceId: t.mainWorkspaceId, projectId: alpha });
    await t.admin.put('/api/environment', { environmentId: production.environmentId, requiredApprovals: 0 });
    expect(
      topology.body.environments.map((e: { name: string; requiredApprovals: number }) => [e.name, e.requiredApprovals]),
    ).toEqual([
      ['Staging', 0],
      ['Production', 2],
    ]);
    expect(topology.body.lifecycles[0].phases.map((p: { name: string }) => p.name)).toEqual(['Staging', 'Production']);
    expect(topology.body.project.variables).toEqual([
      expect.objectContaining({
        name: 'Password',
        variableType: 'Sensitive',
        values: [{ value: '********', scope: 'unscoped' }],
      }),
    ]);
    expect(topology.text).not.toContain('hunter2');
  });

  it("sends the workspace's change tick when one of its deployments changes; another workspace is unknown", async () => {
    const principal = await authenticate(t.deps, ADMIN.id, ADMIN.key);
    const abort = new AbortController();
    const changes = await followWorkspace(t.deps, principal, t.mainWorkspaceId, abort.signal, { pollMs: 20 });
    const first = (await changes.next()).value;
    expect(first).toMatchObject({ type: 'changed' });
    const before = (first as { lastChangeTick: bigint }).lastChangeTick;
    expect((await t.admin.post('/api/deployment/cancel', { deploymentId })).status).toBe(200);
    const next = await changes.next();
    expect(next.value).toMatchObject({ type: 'changed' });
    expect((next.value as { lastChangeTick: bigint }).lastChangeTick).toBeGreaterThan(before);
    abort.abort();
    expect((await changes.next()).done).toBe(true);
    const other = await t.workspace();
    const stranger = await t.account([{ role: 'View' }], other);
    const refused = await stranger.get('/api/dashboard/changes', { workspaceId: t.mainWorkspaceId });
    expect([refused.status, refused.body.errorcode]).toEqual([400, 3001]);
  });
});
