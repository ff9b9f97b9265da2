/**
 * Release governance (issue #15) through the public API, with the real engine on the real
 * PostgreSQL and the in-process bus: approvals, deployment freezes, rollback and why a deployment
 * waits. Agents are simulated at the engine's AgentPort (as in engine.test.ts); the e2e suite
 * (test/e2e/governance.e2e.test.ts) runs the same rules with real agent processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, isFinalStatus } from '../../../services/core/index.ts';
import { InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import { testApp, type Client, type TestContext } from '../../helpers/app.ts';
import { ok } from '../../helpers/route-requests.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { environmentId as environmentNamed, onlineMachine } from '../../helpers/engine-fixtures.ts';

/** The clock of the API and the engine: real time plus an offset a test moves forward. */
const clock = { offsetMs: 0, now: () => new Date(Date.now() + clock.offsetMs) };
const MINUTE = 60_000;

let t: TestContext;
let engine: Engine;
let bus: InProcessBus;
let workspaceId: string;
let counter = 0;

/** The simulated agents: every task finishes at once, unless its deployment is held or fails. */
const machines: string[] = [];
const holding = new Set<string>();
const failing = new Set<string>();
let fleetStopped = false;
let fleetLoop: Promise<void> = Promise.resolve();

function startFleet(): void {
  const seen = new Set<string>();
  const waiting: Array<{ machineId: string; taskId: string; deploymentId: string }> = [];
  fleetLoop = (async () => {
    while (!fleetStopped) {
      for (const machineId of [...machines]) {
        for (const task of (await engine.agentPort.assignmentsFor(machineId)).run) {
          if (seen.has(task.taskId)) continue;
          seen.add(task.taskId);
          waiting.push({ machineId, taskId: task.taskId, deploymentId: task.deploymentId });
        }
      }
      for (const task of waiting.splice(0)) {
        if (holding.has(task.deploymentId)) {
          waiting.push(task);
          continue;
        }
        const outcome = failing.has(task.deploymentId) ? 'FAILED' : 'SUCCEEDED';
        await engine.agentPort.recordResult(task.machineId, task.taskId, {
          outcome,
          exitCode: outcome === 'FAILED' ? 3 : 0,
          message: '',
          lastLogSeq: 0,
        });
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
}

beforeAll(async () => {
  t = await testApp({ clock });
  workspaceId = t.mainWorkspaceId;
  const logger = createLogger('silent');
  bus = new InProcessBus({ logger, retryBaseMs: 50 });
  engine = createEngine({ store: t.deps.store, clock, bus, secrets: t.deps.secrets, logger, sweepIntervalMs: 100 });
  await engine.start();
  t.app.deps.wakeDeployments = (ids) => engine.wake(ids);
  t.app.deps.onReleaseCreated = async (release) => void (await engine.triggerAutomaticDeployments(release.id, release));
  startFleet();
});

afterAll(async () => {
  fleetStopped = true;
  await fleetLoop;
  t.app.deps.wakeDeployments = undefined;
  t.app.deps.onReleaseCreated = undefined;
  await engine.stop();
  await bus.close();
});

/** An environment with one machine of the simulated fleet. */
async function environment(name: string, settings: { requiredApprovals?: number } = {}): Promise<string> {
  const { environmentId } = await ok(t.admin.post('/api/environment', { workspaceId, name }));
  if (settings.requiredApprovals)
    await ok(t.admin.put('/api/environment', { environmentId, requiredApprovals: settings.requiredApprovals }));
  const machineId = await onlineMachine(t, `gov-${name}`, environmentId);
  // Connected as of the test clock (a test may have moved it forward).
  await t.db('machines').where({ id: machineId }).update({ last_seen_at: clock.now() });
  machines.push(machineId);
  return environmentId as string;
}

async function project(lifecycleId?: string): Promise<string> {
  const n = ++counter;
  const { projectId } = await ok(t.admin.post('/api/project', { workspaceId, name: `Governed ${n}`, lifecycleId }));
  const { stepTemplateId } = await ok(
    t.admin.post('/api/step-template', { workspaceId, name: `gov-${n}`, script: 'echo hi', scriptLanguage: 'bash' }),
  );
  await ok(t.admin.post('/api/project/step', { projectId, name: 'Say hi', stepTemplateId }));
  return projectId as string;
}

async function release(projectId: string, version: string): Promise<string> {
  return (await ok(t.admin.post('/api/release', { projectId, version }))).releaseId as string;
}

async function deploy(client: Client, releaseId: string, environmentName: string, extra = {}): Promise<string> {
  return (await ok(client.post('/api/release/deploy', { releaseId, environments: [environmentName], ...extra })))
    .deploymentIds[0] as string;
}

async function finalStatus(deploymentId: string): Promise<string> {
  return waitFor(
    async () => {
      const d = await t.deps.store.deployments.get(deploymentId);
      return d && isFinalStatus(d.status) ? d.status : null;
    },
    { timeoutMs: 15_000, description: `deployment ${deploymentId} to finish` },
  );
}

/** GET /api/deployment as a pipeline reads it. */
async function read(deploymentId: string) {
  return ok(t.admin.get('/api/deployment', { deploymentId, skipLogs: 'False' }));
}

/** Every deployment of a release (a test's few). */
async function deploymentsOf(releaseId: string) {
  return (await t.deps.store.deployments.list({ releaseId }, { skip: 0, take: 100 })).items;
}

async function waitingReason(deploymentId: string, expected: RegExp): Promise<string> {
  return waitFor(
    async () => {
      const reason = (await read(deploymentId)).waitingReason as string | null;
      return reason && expected.test(reason) ? reason : null;
    },
    { timeoutMs: 10_000, description: `waitingReason of ${deploymentId} to match ${expected}` },
  );
}

async function logLines(deploymentId: string): Promise<string[]> {
  return ((await read(deploymentId)).logs as Array<{ Data: string }>).map((l) => l.Data);
}

/** Moves both clocks forward; the simulated agents keep counting as connected. */
async function advanceClock(ms: number): Promise<void> {
  clock.offsetMs += ms;
  await t.db('machines').whereIn('id', machines).update({ last_seen_at: clock.now() });
}

async function auditOf(resourceId: string) {
  return (await ok(t.admin.get('/api/audit', { workspaceId, resourceId }))).events as Array<{
    action: string;
    accountName: string;
    after: Record<string, unknown> | null;
  }>;
}

describe('approvals', () => {
  it('needs two distinct approvers, refuses the requester, and starts once both approved', async () => {
    const envId = await environment('Approve-2', { requiredApprovals: 2 });
    const requester = await t.account([{ role: 'Deploy' }, { role: 'View' }, { role: 'ApproveDeployments' }]);
    const first = await t.account([{ role: 'ApproveDeployments' }]);
    const second = await t.account([{ role: 'ApproveDeployments', environmentIds: [envId] }]);
    const elsewhere = await t.account([
      { role: 'ApproveDeployments', environmentIds: [await environmentNamed(t, 'Staging')] },
    ]);
    const releaseId = await release(await project(), '1.0.0');
    const id = await deploy(requester, releaseId, 'Approve-2');

    expect(await waitingReason(id, /awaiting approval/)).toBe('awaiting approval (0 of 2)');
    expect((await read(id)).status.Status).toBe('Queued');
    const pending = await ok(first.get('/api/deployment/approvals', { workspaceId }));
    expect(pending.approvals.map((a: { deploymentId: string }) => a.deploymentId)).toContain(id);

    const own = await requester.post('/api/deployment/approve', { deploymentId: id, comment: 'mine' });
    expect(own.status).toBe(400);
    expect(own.body.error).toMatch(/requested the deployment cannot approve it/);
    const refused = await elsewhere.post('/api/deployment/approve', { deploymentId: id });
    expect(refused.status).toBe(401);
    expect(refused.body.errorcode).toBe(2003);

    expect(await ok(first.post('/api/deployment/approve', { deploymentId: id, comment: 'looks good' }))).toMatchObject({
      decision: 'Approved',
      approvals: 1,
      requiredApprovals: 2,
    });
    expect(await waitingReason(id, /awaiting approval \(1/)).toBe('awaiting approval (1 of 2)');
    const again = await first.post('/api/deployment/approve', { deploymentId: id });
    expect(again.status).toBe(400);
    expect(again.body.error).toMatch(/already approved or rejected/);
    expect((await read(id)).status.Status).toBe('Queued');

    await ok(second.post('/api/deployment/approve', { deploymentId: id }));
    expect(await finalStatus(id)).toBe('Completed');
    const lines = await logLines(id);
    expect(lines).toEqual(
      expect.arrayContaining([
        'Waiting: awaiting approval (0 of 2)',
        expect.stringMatching(/^Approved by account-\d+ \(1 of 2\): looks good$/),
        expect.stringMatching(/^Approved by account-\d+ \(2 of 2\)$/),
        'The deployment completed successfully',
      ]),
    );
    const pendingAfter = await ok(first.get('/api/deployment/approvals', { workspaceId }));
    expect(pendingAfter.approvals.map((a: { deploymentId: string }) => a.deploymentId)).not.toContain(id);
    // The decisions went through the normal request path: each is an audit event with its comment.
    const approvals = (await auditOf(id)).filter((e) => e.action === 'approve');
    expect(approvals).toHaveLength(2);
    expect(approvals.map((e) => e.after?.comment)).toEqual(expect.arrayContaining(['looks good', null]));
  });

  it('cancels a rejected deployment with the comment in its log', async () => {
    await environment('Approve-1', { requiredApprovals: 1 });
    const reviewer = await t.account([{ role: 'ApproveDeployments' }]);
    const id = await deploy(t.admin, await release(await project(), '1.0.0'), 'Approve-1');
    await waitingReason(id, /awaiting approval/);
    expect(
      await ok(reviewer.post('/api/deployment/reject', { deploymentId: id, comment: 'not during the demo' })),
    ).toMatchObject({ decision: 'Rejected' });
    expect(await finalStatus(id)).toBe('Cancelled');
    expect(await logLines(id)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Rejected by account-\d+: not during the demo$/),
        'The deployment was cancelled',
      ]),
    );
    const late = await reviewer.post('/api/deployment/approve', { deploymentId: id });
    expect(late.status).toBe(400);
    expect((await auditOf(id)).map((e) => e.action)).toContain('reject');
  });

  it('holds automatic phase deployments and promotions for approval too', async () => {
    const devId = await environment('Appr-Dev');
    const prodId = await environment('Appr-Prod', { requiredApprovals: 1 });
    const { lifecycleId } = await ok(
      t.admin.post('/api/lifecycle', {
        workspaceId,
        name: 'Approved lifecycle',
        phases: [
          { name: 'Dev', environments: [{ environmentId: devId, howToTrigger: 'Automatic' }] },
          { name: 'Prod', environments: [{ environmentId: prodId, howToTrigger: 'Automatic' }] },
        ],
      }),
    );
    const projectId = await project(lifecycleId);
    const releaseId = await release(projectId, '1.0.0');
    const list = async () =>
      (await ok(t.admin.get('/api/deployment/list', { projectId }))).deployments as Array<{
        deploymentId: string;
        environmentName: string;
        automatic: boolean;
        waitingReason: string | null;
        requiredApprovals: number;
      }>;
    const prod = await waitFor(async () => (await list()).find((d) => d.environmentName === 'Appr-Prod'), {
      timeoutMs: 15_000,
      description: 'the automatic Prod deployment',
    });
    expect(prod.automatic).toBe(true);
    expect(await waitingReason(prod.deploymentId, /awaiting/)).toBe('awaiting approval (0 of 1)');
    expect((await list()).find((d) => d.deploymentId === prod.deploymentId)).toMatchObject({
      waitingReason: 'awaiting approval (0 of 1)',
      requiredApprovals: 1,
    });
    await ok(t.admin.post('/api/deployment/approve', { deploymentId: prod.deploymentId }));
    expect(await finalStatus(prod.deploymentId)).toBe('Completed');

    // A promotion to it waits the same way.
    const promoted = await ok(
      t.admin.post('/api/release/promote', { projectId, version: '1.0.0', environments: ['Appr-Prod'] }),
    );
    expect(await waitingReason(promoted.deploymentId, /awaiting/)).toBe('awaiting approval (0 of 1)');
    await ok(t.admin.post('/api/deployment/cancel', { deploymentId: promoted.deploymentId }));
    expect(await finalStatus(promoted.deploymentId)).toBe('Cancelled');
    void releaseId;
  });
});

describe('pending approvals list', () => {
  it('lists only what the caller may approve: its environments, not its own, not already decided', async () => {
    const aId = await environment('Narrow-A', { requiredApprovals: 2 });
    const bId = await environment('Narrow-B', { requiredApprovals: 1 });
    const requester = await t.account([{ role: 'Deploy' }, { role: 'ApproveDeployments' }]);
    const approverA = await t.account([{ role: 'ApproveDeployments', environmentIds: [aId] }]);
    const approverB = await t.account([{ role: 'ApproveDeployments', environmentIds: [bId] }, { role: 'View' }]);
    const other = await t.account([{ role: 'ApproveDeployments' }]);
    const viewer = await t.account([{ role: 'View' }]);
    const releaseId = await release(await project(), '1.0.0');
    const a = await deploy(requester, releaseId, 'Narrow-A');
    const b = await deploy(requester, releaseId, 'Narrow-B');
    await waitingReason(a, /awaiting approval/);
    await waitingReason(b, /awaiting approval/);
    const pending = async (client: Client) => {
      const page = await ok(client.get('/api/deployment/approvals', { workspaceId }));
      const ids = (page.approvals as Array<{ deploymentId: string }>).map((x) => x.deploymentId);
      return { ids: ids.filter((id) => id === a || id === b), totalCount: page.totalCount as number };
    };
    expect(await pending(approverA)).toEqual({ ids: [a], totalCount: 1 });
    expect((await pending(approverB)).ids).toEqual([b]);
    expect((await pending(other)).ids).toEqual([a, b]);
    expect((await pending(t.admin)).ids).toEqual([a, b]);
    // Its own requests are not the requester's to approve; a View-only account approves nothing.
    expect((await pending(requester)).ids).toEqual([]);
    expect(await pending(viewer)).toEqual({ ids: [], totalCount: 0 });

    await ok(other.post('/api/deployment/approve', { deploymentId: a }));
    expect((await pending(other)).ids).toEqual([b]);
    expect((await pending(approverA)).ids).toEqual([a]);
    for (const id of [a, b]) await ok(t.admin.post('/api/deployment/cancel', { deploymentId: id }));
    expect(await finalStatus(a)).toBe('Cancelled');
    expect(await pending(approverA)).toEqual({ ids: [], totalCount: 0 });
  });
});

describe('dashboard deployment page', () => {
  it('adds waitingReason, queuePosition and the approval with why this account may or may not decide', async () => {
    await environment('Dash-Appr', { requiredApprovals: 1 });
    const requester = await t.account([{ role: 'Deploy' }, { role: 'View' }, { role: 'ApproveDeployments' }]);
    const approver = await t.account([{ role: 'View' }, { role: 'ApproveDeployments' }]);
    const viewer = await t.account([{ role: 'View' }]);
    const releaseId = await release(await project(), '1.0.0');
    const id = await deploy(requester, releaseId, 'Dash-Appr');
    await waitingReason(id, /awaiting approval/);
    const pageOf = (client: Client) => ok(client.get('/api/dashboard/deployment', { deploymentId: id }));

    expect(await pageOf(approver)).toMatchObject({
      waitingReason: 'awaiting approval (0 of 1)',
      queuePosition: null,
      approval: { requiredApprovals: 1, approvedBy: [], awaiting: true, decide: { allowed: true, reason: null } },
    });
    expect((await pageOf(requester)).approval.decide).toEqual({
      allowed: false,
      reason: 'You requested this deployment: another account must approve it',
    });
    expect((await pageOf(viewer)).approval.decide).toEqual({
      allowed: false,
      reason: 'Your account lacks the ApproveDeployments role here',
    });

    await ok(approver.post('/api/deployment/approve', { deploymentId: id }));
    expect(await finalStatus(id)).toBe('Completed');
    const after = await pageOf(approver);
    expect(after).toMatchObject({ waitingReason: null, queuePosition: null });
    expect(after.approval).toMatchObject({
      approvedBy: [expect.stringMatching(/^account-\d+$/)],
      awaiting: false,
      decide: { allowed: false, reason: 'The deployment no longer awaits approval' },
    });
    // A deployment that needs no approval has none.
    await environment('Dash-Free');
    const free = await deploy(t.admin, releaseId, 'Dash-Free');
    expect(await finalStatus(free)).toBe('Completed');
    expect((await ok(t.admin.get('/api/dashboard/deployment', { deploymentId: free }))).approval).toBeNull();
  });
});

describe('approvals per lifecycle phase environment', () => {
  it('applies the higher of the environment and its phase environment, and reads it back only where set', async () => {
    const devId = await environment('PhaseAppr-Dev');
    const prodId = await environment('PhaseAppr-Prod', { requiredApprovals: 2 });
    const { lifecycleId } = await ok(
      t.admin.post('/api/lifecycle', {
        workspaceId,
        name: 'Phase approvals',
        phases: [
          { name: 'Dev', environments: [{ environmentId: devId, requiredApprovals: 2 }] },
          { name: 'Prod', environments: [{ environmentId: prodId, requiredApprovals: 1 }] },
        ],
      }),
    );
    const phaseEnvironments = async () =>
      (
        (await ok(t.admin.get('/api/lifecycle/details', { lifecycleId }))).phases as Array<{
          phaseId: string;
          environments: Array<Record<string, unknown>>;
        }>
      ).flatMap((p) => p.environments.map((e): Record<string, unknown> => ({ ...e, phaseId: p.phaseId })));
    expect((await phaseEnvironments()).map((e) => e.requiredApprovals)).toEqual([2, 1]);
    const projectId = await project(lifecycleId);
    const releaseId = await release(projectId, '1.0.0');
    // The release's frozen lifecycle keeps the spec's shape: the setting is read live instead.
    expect(JSON.stringify((await t.deps.store.releases.get(releaseId))!.snapshot)).not.toContain('requiredApprovals');
    const approvers = [
      await t.account([{ role: 'ApproveDeployments' }]),
      await t.account([{ role: 'ApproveDeployments' }]),
    ];
    const listed = async (deploymentId: string) =>
      (
        (await ok(t.admin.get('/api/deployment/list', { projectId }))).deployments as Array<{
          deploymentId: string;
          requiredApprovals: number;
        }>
      ).find((d) => d.deploymentId === deploymentId);

    // Dev needs none of its own: its phase environment's 2 apply.
    const dev = await deploy(t.admin, releaseId, 'PhaseAppr-Dev');
    expect(await waitingReason(dev, /awaiting approval/)).toBe('awaiting approval (0 of 2)');
    expect(await listed(dev)).toMatchObject({ requiredApprovals: 2 });
    for (const approver of approvers) await ok(approver.post('/api/deployment/approve', { deploymentId: dev }));
    expect(await finalStatus(dev)).toBe('Completed');

    // Prod needs 2 itself and 1 through its phase: the higher applies.
    const prod = await deploy(t.admin, releaseId, 'PhaseAppr-Prod');
    expect(await waitingReason(prod, /awaiting approval/)).toBe('awaiting approval (0 of 2)');
    await ok(t.admin.post('/api/deployment/cancel', { deploymentId: prod }));
    expect(await finalStatus(prod)).toBe('Cancelled');

    // 0 clears the phase environment's requirement: the field leaves the read shape again, and a
    // new deployment of the same release starts without approval.
    const devPhase = (await phaseEnvironments()).find((e) => e.environmentId === devId)!;
    await ok(
      t.admin.put('/api/lifecycle/phase/environment', {
        phaseId: devPhase.phaseId,
        environmentId: devId,
        requiredApprovals: 0,
      }),
    );
    const after = await phaseEnvironments();
    expect(after.find((e) => e.environmentId === devId)).not.toHaveProperty('requiredApprovals');
    expect(after.find((e) => e.environmentId === prodId)).toMatchObject({
      requiredApprovals: 1,
      howToTrigger: 'Manual',
    });
    const again = await deploy(t.admin, releaseId, 'PhaseAppr-Dev');
    expect(await finalStatus(again)).toBe('Completed');
    expect(await listed(again)).toMatchObject({ requiredApprovals: 0 });
  });
});

describe('deployment freezes', () => {
  it('refuses deploy naming the freeze, lets OverrideFreeze through with a logged reason', async () => {
    const envId = await environment('Frozen');
    const releaseId = await release(await project(), '1.0.0');
    const now = clock.now();
    const { freezeId } = await ok(
      t.admin.post('/api/deployment/freeze', {
        workspaceId,
        name: 'Black Friday',
        environmentIds: [envId],
        startUtc: new Date(now.getTime() - MINUTE).toISOString(),
        endUtc: new Date(now.getTime() + 60 * MINUTE).toISOString(),
      }),
    );
    const listed = await ok(t.admin.get('/api/deployment/freeze', { workspaceId }));
    expect(listed.freezes.find((f: { freezeId: string }) => f.freezeId === freezeId).activeUntilUtc).not.toBeNull();

    const refused = await t.admin.post('/api/release/deploy', { releaseId, environments: ['Frozen'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/frozen by 'Black Friday' until/);
    expect(await t.db('deployments').where({ release_id: releaseId })).toHaveLength(0);

    const deployer = await t.account([{ role: 'Deploy' }, { role: 'View' }]);
    const noRight = await deployer.post('/api/release/deploy', {
      releaseId,
      environments: ['Frozen'],
      freezeOverrideReason: 'hotfix',
    });
    expect(noRight.status).toBe(401);
    expect(noRight.body.error).toMatch(/OverrideFreeze/);

    const responder = await t.account([{ role: 'Deploy' }, { role: 'View' }, { role: 'OverrideFreeze' }]);
    const overridden = await ok(
      responder.post('/api/release/deploy', {
        releaseId,
        environments: ['Frozen'],
        freezeOverrideReason: 'hotfix for the checkout outage',
      }),
    );
    expect(overridden.freezeOverride).toEqual({ reason: 'hotfix for the checkout outage', freezes: ['Black Friday'] });
    const id = overridden.deploymentIds[0] as string;
    expect(await finalStatus(id)).toBe('Completed');
    expect(await logLines(id)).toContainEqual(
      expect.stringMatching(
        /^Deployment freeze 'Black Friday' overridden by account-\d+: hotfix for the checkout outage$/,
      ),
    );
    // The deploy request's event (its resource is the release) holds the reason.
    const audited = (await auditOf(releaseId)).find((e) => e.action === 'deploy' && e.after?.freezeOverride);
    expect(audited?.after?.freezeOverride).toEqual({
      reason: 'hotfix for the checkout outage',
      freezes: ['Black Friday'],
    });
    await ok(t.admin.delete('/api/deployment/freeze', { freezeId }));
  });

  it('holds a scheduled deployment and an automatic phase deployment that fall due until the freeze ends', async () => {
    const devId = await environment('Thaw-Dev');
    const prodId = await environment('Thaw-Prod');
    const { lifecycleId } = await ok(
      t.admin.post('/api/lifecycle', {
        workspaceId,
        name: 'Thawing lifecycle',
        phases: [
          { name: 'Dev', environments: [{ environmentId: devId, howToTrigger: 'Manual' }] },
          { name: 'Prod', environments: [{ environmentId: prodId, howToTrigger: 'Automatic' }] },
        ],
      }),
    );
    const projectId = await project(lifecycleId);
    const releaseId = await release(projectId, '1.0.0');
    const start = clock.now();
    const end = new Date(start.getTime() + 30 * MINUTE);
    const { freezeId } = await ok(
      t.admin.post('/api/deployment/freeze', {
        workspaceId,
        name: 'Quarter close',
        environmentIds: [prodId],
        projectIds: [projectId],
        startUtc: new Date(start.getTime() - MINUTE).toISOString(),
        endUtc: end.toISOString(),
      }),
    );
    // Dev is not frozen: it runs, and its completion makes Prod due by itself.
    expect(await finalStatus(await deploy(t.admin, releaseId, 'Thaw-Dev'))).toBe('Completed');
    const automatic = await waitFor(
      async () => (await deploymentsOf(releaseId)).find((d) => d.environmentId === prodId && d.automatic),
      { timeoutMs: 10_000, description: 'the automatic Prod deployment' },
    );
    const frozen = `frozen by 'Quarter close' until ${end.toISOString()}`;
    expect(await waitingReason(automatic.id, /frozen/)).toBe(frozen);
    // A deployment scheduled into the freeze is accepted (it is not due yet), then waits.
    const scheduled = await deploy(t.admin, releaseId, 'Thaw-Prod', {
      deploymentDateUnixMillis: start.getTime() + 10 * MINUTE,
    });
    expect((await read(scheduled)).waitingReason).toMatch(/^scheduled for /);
    await advanceClock(11 * MINUTE);
    expect(await waitingReason(scheduled, /frozen/)).toBe(frozen);
    expect((await read(automatic.id)).status.Status).toBe('Queued');
    expect(await logLines(automatic.id)).toContain(`Waiting: ${frozen}`);

    await advanceClock(20 * MINUTE); // past the end: both start by themselves
    expect(await finalStatus(automatic.id)).toBe('Completed');
    expect(await finalStatus(scheduled)).toBe('Completed');
    const listed = await ok(t.admin.get('/api/deployment/freeze/details', { freezeId }));
    expect(listed.activeUntilUtc).toBeNull();
  });

  it('lets a held deployment start when its freeze is deleted', async () => {
    const envId = await environment('Unfreeze');
    const releaseId = await release(await project(), '1.0.0');
    const scheduled = await deploy(t.admin, releaseId, 'Unfreeze', {
      deploymentDateUnixMillis: clock.now().getTime() + MINUTE,
    });
    const { freezeId } = await ok(
      t.admin.post('/api/deployment/freeze', {
        workspaceId,
        name: 'Weekly',
        environmentIds: [envId],
        // Every minute of every day, for a week: holding now whatever the time zone.
        recurrence: { cron: '* * * * *', durationMinutes: 7 * 24 * 60, timeZone: 'Europe/Berlin' },
      }),
    );
    await advanceClock(2 * MINUTE);
    expect(await waitingReason(scheduled, /frozen/)).toMatch(/^frozen by 'Weekly' until /);
    await ok(t.admin.delete('/api/deployment/freeze', { freezeId }));
    expect(await finalStatus(scheduled)).toBe('Completed');
  });

  it('validates freezes: a window or a recurrence, known environments and time zones', async () => {
    const envId = await environment('Freeze-Rules');
    const base = { workspaceId, name: 'Bad', environmentIds: [envId] };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /startUtc and endUtc, or a recurrence/],
      [{ startUtc: '2100-01-02T00:00:00Z', endUtc: '2100-01-01T00:00:00Z' }, /endUtc must be after startUtc/],
      [{ recurrence: { cron: '61 * * * *', durationMinutes: 60, timeZone: 'UTC' } }, /minute field/],
      [{ recurrence: { cron: '0 18 * * 5', durationMinutes: 60, timeZone: 'Mars/Olympus' } }, /Unknown time zone/],
      [
        { environmentIds: ['no-such-environment'], startUtc: '2100-01-01T00:00:00Z', endUtc: '2100-01-02T00:00:00Z' },
        /environmentIds/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await t.admin.post('/api/deployment/freeze', { ...base, ...body });
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error).toMatch(message);
    }
    expect(await t.db('deployment_freezes').where({ name: 'Bad' })).toHaveLength(0);
  });
});

describe('rollback', () => {
  async function completed(projectId: string, environmentName: string, version: string, fail = false) {
    const releaseId = await release(projectId, version);
    const id = await deploy(t.admin, releaseId, environmentName);
    if (fail) failing.add(id);
    expect(await finalStatus(id)).toBe(fail ? 'Failed' : 'Completed');
    return releaseId;
  }

  it('redeploys the release before the current one after two successful deployments', async () => {
    await environment('Rollback-A');
    const projectId = await project();
    const first = await completed(projectId, 'Rollback-A', '1.0.0');
    await completed(projectId, 'Rollback-A', '2.0.0');
    const rolled = await ok(t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-A' }));
    expect(rolled).toMatchObject({ releaseId: first, version: '1.0.0', rolledBackFromVersion: '2.0.0' });
    expect(await finalStatus(rolled.deploymentId)).toBe('Completed');
    const listed = (await ok(t.admin.get('/api/deployment/list', { projectId }))).deployments as Array<{
      deploymentId: string;
      rollback: boolean;
      version: string;
    }>;
    expect(listed.find((d) => d.deploymentId === rolled.deploymentId)).toMatchObject({
      rollback: true,
      version: '1.0.0',
    });
    expect(listed.filter((d) => d.rollback)).toHaveLength(1);
    expect(await logLines(rolled.deploymentId)).toContainEqual(
      expect.stringMatching(/^Rollback by .+: redeploying 1\.0\.0 in place of 2\.0\.0$/),
    );
  });

  it('redeploys the last successful release after a failed deployment', async () => {
    await environment('Rollback-B');
    const projectId = await project();
    await completed(projectId, 'Rollback-B', '1.0.0');
    const good = await completed(projectId, 'Rollback-B', '2.0.0');
    await completed(projectId, 'Rollback-B', '3.0.0', true);
    const rolled = await ok(t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-B' }));
    expect(rolled).toMatchObject({ releaseId: good, version: '2.0.0', rolledBackFromVersion: '3.0.0' });
    expect(await finalStatus(rolled.deploymentId)).toBe('Completed');
  });

  it('refuses with a clear message when there is nothing to roll back to', async () => {
    await environment('Rollback-C');
    const projectId = await project();
    const nothing = await t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-C' });
    expect(nothing.status).toBe(400);
    expect(nothing.body.error).toMatch(/Nothing has been deployed to 'Rollback-C'/);
    await completed(projectId, 'Rollback-C', '1.0.0');
    const only = await t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-C' });
    expect(only.status).toBe(400);
    expect(only.body.error).toMatch(/No release completed successfully in 'Rollback-C' before 1\.0\.0/);
  });

  it('respects freezes and approvals like any deployment', async () => {
    const envId = await environment('Rollback-D');
    const projectId = await project();
    await completed(projectId, 'Rollback-D', '1.0.0');
    await completed(projectId, 'Rollback-D', '2.0.0');
    const now = clock.now();
    const { freezeId } = await ok(
      t.admin.post('/api/deployment/freeze', {
        workspaceId,
        name: 'No rollbacks',
        environmentIds: [envId],
        startUtc: new Date(now.getTime() - MINUTE).toISOString(),
        endUtc: new Date(now.getTime() + 60 * MINUTE).toISOString(),
      }),
    );
    const frozen = await t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-D' });
    expect(frozen.status).toBe(400);
    expect(frozen.body.error).toMatch(/frozen by 'No rollbacks'/);
    await ok(t.admin.delete('/api/deployment/freeze', { freezeId }));
    await ok(t.admin.put('/api/environment', { environmentId: envId, requiredApprovals: 1 }));
    const rolled = await ok(t.admin.post('/api/release/rollback', { projectId, environmentName: 'Rollback-D' }));
    expect(await waitingReason(rolled.deploymentId, /awaiting/)).toBe('awaiting approval (0 of 1)');
    const approver = await t.account([{ role: 'ApproveDeployments' }]);
    await ok(approver.post('/api/deployment/approve', { deploymentId: rolled.deploymentId }));
    expect(await finalStatus(rolled.deploymentId)).toBe('Completed');
  });

  it('never lets an automatic phase deployment carry a rolled-back-to release on', async () => {
    const devId = await environment('Undo-Dev');
    const prodId = await environment('Undo-Prod');
    const { lifecycleId } = await ok(
      t.admin.post('/api/lifecycle', {
        workspaceId,
        name: 'Undo lifecycle',
        phases: [
          { name: 'Dev', environments: [{ environmentId: devId, howToTrigger: 'Manual' }] },
          { name: 'Prod', environments: [{ environmentId: prodId, howToTrigger: 'Automatic' }] },
        ],
      }),
    );
    const projectId = await project(lifecycleId);
    // 1.0.0 reaches Dev while Prod is switched off: it never goes to Prod by itself then.
    await ok(t.admin.put('/api/environment', { environmentId: prodId, enabled: false }));
    const old = await completed(projectId, 'Undo-Dev', '1.0.0');
    await ok(t.admin.put('/api/environment', { environmentId: prodId, enabled: true }));
    const current = await completed(projectId, 'Undo-Dev', '2.0.0');
    const prod = await waitFor(async () => (await deploymentsOf(current)).find((d) => d.environmentId === prodId), {
      timeoutMs: 10_000,
      description: '2.0.0 in Prod',
    });
    expect(await finalStatus(prod.id)).toBe('Completed');
    const rolled = await ok(t.admin.post('/api/release/rollback', { projectId, environmentName: 'Undo-Dev' }));
    expect(rolled.releaseId).toBe(old);
    expect(await finalStatus(rolled.deploymentId)).toBe('Completed');
    // 1.0.0 has now completed its Dev phase and Prod is on: without the rule it would go to
    // Prod by itself and undo 2.0.0 there.
    expect(await engine.triggerAutomaticDeployments(old)).toEqual([]);
    expect((await deploymentsOf(old)).map((d) => d.environmentId)).not.toContain(prodId);
  });
});

describe('waitingReason', () => {
  it('names the deployment ahead in the same project and environment, with the queue position', async () => {
    await environment('Queue-A');
    const projectId = await project();
    const first = await deploy(t.admin, await release(projectId, '1.0.0'), 'Queue-A');
    holding.add(first);
    await waitFor(async () => (await read(first)).status.Status === 'Running', { description: 'first running' });
    expect((await read(first)).waitingReason).toBeNull();
    const second = await deploy(t.admin, await release(projectId, '2.0.0'), 'Queue-A');
    expect(await waitingReason(second, /waiting for deployment/)).toBe(
      `waiting for deployment ${first} in the same project and environment`,
    );
    const view = await read(second);
    expect(view.status.Status).toBe('AwaitingSlot');
    expect(view.queuePosition).toBe(1);
    // Its environment, which no log line has named yet.
    expect(view.environmentName).toBe('Queue-A');
    const listed = (await ok(t.admin.get('/api/deployment/list', { projectId }))).deployments as Array<{
      deploymentId: string;
      waitingReason: string | null;
      queuePosition: number | null;
    }>;
    expect(listed.find((d) => d.deploymentId === second)).toMatchObject({
      waitingReason: `waiting for deployment ${first} in the same project and environment`,
      queuePosition: 1,
    });
    expect(listed.find((d) => d.deploymentId === first)).toMatchObject({ waitingReason: null, queuePosition: null });
    holding.delete(first);
    expect(await finalStatus(first)).toBe('Completed');
    expect(await finalStatus(second)).toBe('Completed');
    expect((await read(second)).waitingReason).toBeNull();
  });

  it('says there is no free slot when the organization runs its maximum, with the queue position', async () => {
    await environment('Slot-A');
    await environment('Slot-B');
    const settings = await ok(t.admin.get('/api/organization/settings'));
    await ok(t.admin.put('/api/organization/settings', { maxConcurrentDeployments: 1 }));
    try {
      const busy = await deploy(t.admin, await release(await project(), '1.0.0'), 'Slot-A');
      holding.add(busy);
      await waitFor(async () => (await read(busy)).status.Status === 'Running', { description: 'busy running' });
      const next = await deploy(t.admin, await release(await project(), '1.0.0'), 'Slot-B');
      const after = await deploy(t.admin, await release(await project(), '1.0.0'), 'Slot-B');
      expect(await waitingReason(next, /no free slot/)).toBe(
        "no free slot: the organization's maxConcurrentDeployments are running",
      );
      await waitingReason(after, /no free slot/);
      expect((await read(next)).queuePosition).toBe(1);
      expect((await read(after)).queuePosition).toBe(2);
      holding.delete(busy);
      expect(await finalStatus(next)).toBe('Completed');
      expect(await finalStatus(after)).toBe('Completed');
    } finally {
      await ok(
        t.admin.put('/api/organization/settings', { maxConcurrentDeployments: settings.maxConcurrentDeployments }),
      );
    }
  });

  it('says when a scheduled deployment is due', async () => {
    await environment('Later');
    const at = clock.now().getTime() + 60 * MINUTE;
    const id = await deploy(t.admin, await release(await project(), '1.0.0'), 'Later', {
      deploymentDateUnixMillis: at,
    });
    const view = await read(id);
    expect(view.status.Status).toBe('Queued');
    expect(view.waitingReason).toBe(`scheduled for ${new Date(at).toISOString()}`);
    expect(view.queuePosition).toBeNull();
    await ok(t.admin.post('/api/deployment/cancel', { deploymentId: id }));
    expect(await finalStatus(id)).toBe('Cancelled');
  });
});
