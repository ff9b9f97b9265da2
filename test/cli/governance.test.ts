/**
 * The governance commands of the gantry CLI (issue #15) as a process against a real control
 * plane and a real agent: approve, reject and the pending list, the waitingReason shown while
 * waiting, rollback, a freeze override, and machine upgrade — checked by exit code, output and
 * the server's state.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from '../e2e/harness.ts';
import { printed, runCli, startCli } from './run-cli.ts';

let plane: ControlPlane;
let admin: Api;
let workspaceId: string;
let lifecycleId: string;
let environments: Record<string, string>;
type Account = { id: string; key: string; env: Record<string, string> };
let ci: Account;
let approvers: Account[];
let responder: Account;

async function account(name: string, roles: string[]): Promise<Account> {
  const created = await admin.post('/api/service-account', {
    workspaceId,
    name,
    roles: roles.map((role) => ({ role })),
  });
  expect(created.status, created.text).toBe(200);
  const key = await admin.post('/api/service-account/api-key', { serviceAccountId: created.body.serviceAccountId });
  expect(key.status, key.text).toBe(200);
  const id = created.body.serviceAccountId as string;
  return {
    id,
    key: key.body.apiKey,
    env: { GANTRY_URL: plane.url, GANTRY_ACCOUNT_ID: id, GANTRY_API_KEY: key.body.apiKey },
  };
}

beforeAll(async () => {
  // The agent bundle the agents run is the one this plane ships: its agents are up to date.
  plane = await startControlPlane({ env: { GANTRY_AGENT_BUNDLE_DIR: path.dirname(agentBundle()) } });
  admin = api(plane.url);
  ({ workspaceId, environments, defaultLifecycleId: lifecycleId } = await workspaceOf(admin));
  await startMachines(plane, admin, workspaceId, [
    { name: 'gov-cli-agent', environmentIds: [environments.Staging!, environments.Production!] },
  ]);
  const production = await admin.put('/api/environment', {
    environmentId: environments.Production,
    requiredApprovals: 2,
  });
  expect(production.status, production.text).toBe(200);
  ci = await account('gov-ci', ['View', 'Deploy', 'CreateRelease']);
  approvers = [
    await account('approver-1', ['View', 'ApproveDeployments']),
    await account('approver-2', ['View', 'ApproveDeployments']),
  ];
  responder = await account('responder', ['View', 'Deploy', 'OverrideFreeze']);
}, 180_000);

afterAll(async () => {
  await cleanup();
});

async function projectWithReleases(...versions: string[]): Promise<{ projectId: string; name: string }> {
  const { projectId } = await bashProject(admin, workspaceId, lifecycleId, [{ name: 'Say', script: 'echo deployed' }]);
  for (const version of versions) {
    const created = await admin.post('/api/release', { projectId, version });
    expect(created.status, created.text).toBe(200);
  }
  const name = (await admin.get('/api/project/details', { projectId })).body.name as string;
  return { projectId, name };
}

/** The CLI as a process whose stderr the test reads while it runs. */
function watchedCli(args: string[], env: Record<string, string>) {
  const cli = startCli(args, env);
  return {
    stderr: () => cli.stderr(),
    ended: cli.ended,
    /** Waits until stderr shows `text`. */
    shows: (text: string) =>
      waitFor(async () => cli.stderr().includes(text) || null, {
        timeoutMs: 30_000,
        description: `the CLI to print '${text}' (stderr so far: ${cli.stderr()})`,
      }),
  };
}

async function deployTo(environment: string, projectId: string, version: string): Promise<string> {
  const releaseId = (await admin.get('/api/release', { projectId })).body.releases.find(
    (r: { version: string }) => r.version === version,
  ).releaseId as string;
  const deployed = await api(plane.url, ci).post('/api/release/deploy', { releaseId, environments: [environment] });
  expect(deployed.status, deployed.text).toBe(200);
  return deployed.body.deploymentIds[0] as string;
}

describe('approvals from the command line', () => {
  it('waits showing why, lists what each account may approve, and completes after two approvals', async () => {
    const project = await projectWithReleases('1.0.0');
    expect((await waitForDeployment(admin, await deployTo('Staging', project.projectId, '1.0.0'))).Status).toBe(
      'Completed',
    );

    const deploy = watchedCli(
      ['release', 'deploy', '--project', project.name, '--version', '1.0.0', '--env', 'Production', '--wait'],
      ci.env,
    );
    await deploy.shows('Waiting: awaiting approval (0 of 2)');
    const deploymentId = (
      (await admin.get('/api/deployment/list', { projectId: project.projectId })).body.deployments as Array<{
        deploymentId: string;
        environmentName: string;
      }>
    ).find((d) => d.environmentName === 'Production')!.deploymentId;

    const pending = await runCli(['deployment', 'approvals', '-o', 'json'], approvers[0]!.env);
    expect(pending.code, printed(pending)).toBe(0);
    expect(pending.json().approvals).toEqual([
      expect.objectContaining({
        deploymentId,
        version: '1.0.0',
        environmentName: 'Production',
        requestedBy: 'gov-ci',
        approvals: 0,
        requiredApprovals: 2,
        approvedBy: [],
        waitingReason: 'awaiting approval (0 of 2)',
      }),
    ]);
    // The requester may approve nothing (no role), and its list is empty.
    const own = await runCli(['deployment', 'approvals'], ci.env);
    expect(own.code, printed(own)).toBe(0);
    expect(own.stdout).toBe('No deployment awaits your approval\n');
    const refused = await runCli(['deployment', 'approve', deploymentId], ci.env);
    expect(refused.code, printed(refused)).toBe(5);

    const first = await runCli(
      ['deployment', 'approve', deploymentId, '--comment', 'checked the notes', '-o', 'json'],
      approvers[0]!.env,
    );
    expect(first.code, printed(first)).toBe(0);
    expect(first.json()).toMatchObject({ deploymentId, decision: 'Approved', approvals: 1, requiredApprovals: 2 });
    await deploy.shows('Waiting: awaiting approval (1 of 2)');
    const twice = await runCli(['deployment', 'approve', deploymentId], approvers[0]!.env);
    expect(twice.code, printed(twice)).toBe(2);
    expect(twice.stderr).toMatch(/already approved or rejected/);

    const second = await runCli(['deployment', 'approve', deploymentId], approvers[1]!.env);
    expect(second.code, printed(second)).toBe(0);
    expect(second.stdout).toBe(`Approved deployment ${deploymentId} (2 of 2 approvals)\n`);
    const run = await deploy.ended;
    expect(run.code, printed(run)).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`${deploymentId}\\s+Production\\s+Completed`));
    // Each reason once, in order, while it waited.
    expect(run.stderr.match(/Waiting: .*/g)).toEqual([
      'Waiting: awaiting approval (0 of 2)',
      'Waiting: awaiting approval (1 of 2)',
    ]);
  });

  it('rejects with a comment (required), which cancels the deployment: its waiter exits 4', async () => {
    const project = await projectWithReleases('1.0.0');
    expect((await waitForDeployment(admin, await deployTo('Staging', project.projectId, '1.0.0'))).Status).toBe(
      'Completed',
    );
    const deploymentId = await deployTo('Production', project.projectId, '1.0.0');
    // A waiter that gives up says how the deployment can go on, not only how to cancel it.
    const gaveUp = await runCli(['deployment', 'wait', deploymentId, '--timeout', '3s'], ci.env);
    expect(gaveUp.code, printed(gaveUp)).toBe(3);
    // No log line names the environment before it starts: the waiter learns it from the deployment.
    expect(gaveUp.stderr).toMatch(/Timed out after [^:]+: Production still Queued\n/);
    expect(gaveUp.stdout).toMatch(new RegExp(`^${deploymentId} +Production +Queued `, 'm'));
    expect(gaveUp.stderr).toContain(
      `To approve (an account other than the one that requested it):\n  gantry deployment approve ${deploymentId}\n`,
    );
    const noComment = await runCli(['deployment', 'reject', deploymentId], approvers[0]!.env);
    expect(noComment.code, printed(noComment)).toBe(2);
    const blank = await runCli(['deployment', 'reject', deploymentId, '--comment', ' '], approvers[0]!.env);
    expect(blank.code, printed(blank)).toBe(2);

    const rejected = await runCli(
      ['deployment', 'reject', deploymentId, '--comment', 'not during the demo'],
      approvers[0]!.env,
    );
    expect(rejected.code, printed(rejected)).toBe(0);
    expect(rejected.stdout).toBe(`Rejected deployment ${deploymentId}: it is cancelled\n`);
    const waited = await runCli(['deployment', 'wait', deploymentId], ci.env);
    expect(waited.code, printed(waited)).toBe(4);
    const logs = await runCli(['deployment', 'logs', deploymentId], ci.env);
    expect(logs.stdout).toMatch(/Rejected by approver-1: not during the demo/);
  });
});

describe('gantry release rollback', () => {
  it('redeploys the release before the current one and waits for it; exits 2 when there is none', async () => {
    const project = await projectWithReleases('1.0.0', '2.0.0');
    for (const version of ['1.0.0', '2.0.0'])
      expect((await waitForDeployment(admin, await deployTo('Staging', project.projectId, version))).Status).toBe(
        'Completed',
      );
    const run = await runCli(
      ['release', 'rollback', '--project', project.name, '--env', environments.Staging!, '--wait', '-o', 'json'],
      ci.env,
    );
    expect(run.code, printed(run)).toBe(0);
    expect(run.json()).toEqual({
      projectId: project.projectId,
      version: '1.0.0',
      rolledBackFromVersion: '2.0.0',
      outcome: 'Completed',
      deployments: [expect.objectContaining({ environmentName: 'Staging', status: 'Completed' })],
    });
    expect(run.stderr).toMatch(/Rolling back from 2\.0\.0 to 1\.0\.0/);
    const listed = (await admin.get('/api/deployment/list', { projectId: project.projectId })).body.deployments;
    expect(
      listed.find((d: { deploymentId: string }) => d.deploymentId === run.json().deployments[0].deploymentId),
    ).toMatchObject({ rollback: true, version: '1.0.0' });

    const single = await projectWithReleases('1.0.0');
    expect((await waitForDeployment(admin, await deployTo('Staging', single.projectId, '1.0.0'))).Status).toBe(
      'Completed',
    );
    const none = await runCli(['release', 'rollback', '--project', single.name, '--env', 'Staging'], ci.env);
    expect(none.code, printed(none)).toBe(2);
    expect(none.stderr).toMatch(/roll/i);
  });
});

describe('deploying during a freeze', () => {
  it('exits 2 naming the freeze; --freeze-override-reason needs OverrideFreeze (5) and is logged', async () => {
    const project = await projectWithReleases('1.0.0', '2.0.0');
    expect((await waitForDeployment(admin, await deployTo('Staging', project.projectId, '1.0.0'))).Status).toBe(
      'Completed',
    );
    const now = Date.now();
    const freeze = await admin.post('/api/deployment/freeze', {
      workspaceId,
      name: 'CLI release week',
      environmentIds: [environments.Staging],
      startUtc: new Date(now - 60_000).toISOString(),
      endUtc: new Date(now + 3_600_000).toISOString(),
    });
    expect(freeze.status, freeze.text).toBe(200);
    try {
      const args = ['release', 'deploy', '--project', project.name, '--version', '2.0.0', '--env', 'Staging'];
      const frozen = await runCli(args, ci.env);
      expect(frozen.code, printed(frozen)).toBe(2);
      expect(frozen.stderr).toMatch(/CLI release week/);
      const notAllowed = await runCli([...args, '--freeze-override-reason', 'hotfix'], ci.env);
      expect(notAllowed.code, printed(notAllowed)).toBe(5);
      const overridden = await runCli(
        [...args, '--freeze-override-reason', 'hotfix for INC-42', '--wait', '-o', 'json'],
        responder.env,
      );
      expect(overridden.code, printed(overridden)).toBe(0);
      const deploymentId = overridden.json().deployments[0].deploymentId as string;
      expect(overridden.json()).toMatchObject({ outcome: 'Completed' });
      const logs = await runCli(['deployment', 'logs', deploymentId], ci.env);
      expect(logs.stdout).toMatch(/Deployment freeze 'CLI release week' overridden by responder: hotfix for INC-42/);
      // A rollback passes the freeze the same way.
      const rollback = ['release', 'rollback', '--project', project.name, '--env', 'Staging'];
      const frozenRollback = await runCli(rollback, responder.env);
      expect(frozenRollback.code, printed(frozenRollback)).toBe(2);
      expect(frozenRollback.stderr).toMatch(/CLI release week/);
    } finally {
      await admin.delete('/api/deployment/freeze', { freezeId: freeze.body.freezeId });
    }
  });
});

describe('gantry machine upgrade', () => {
  it('asks the machines of an environment, or named ones, to upgrade; usage errors exit 2', async () => {
    const manager = await account('machine-manager', ['View', 'ManageWorkspace']);
    const byEnv = await runCli(['machine', 'upgrade', '--env', 'Production', '-o', 'json'], manager.env);
    expect(byEnv.code, printed(byEnv)).toBe(0);
    expect(byEnv.json()).toEqual({
      version: expect.any(String),
      machines: [expect.objectContaining({ name: 'gov-cli-agent', outcome: 'UpToDate' })],
    });
    const byName = await runCli(['machine', 'upgrade', '--machine', 'gov-cli-agent'], manager.env);
    expect(byName.code, printed(byName)).toBe(0);
    expect(byName.stdout).toMatch(/gov-cli-agent\s+\S+\s+UpToDate/);
    const unknown = await runCli(['machine', 'upgrade', '--machine', 'no-such-machine'], manager.env);
    expect(unknown.code, printed(unknown)).toBe(2);
    const nothing = await runCli(['machine', 'upgrade'], manager.env);
    expect(nothing.code, printed(nothing)).toBe(2);
    const both = await runCli(['machine', 'upgrade', '--env', 'Staging', '--machine', 'gov-cli-agent'], manager.env);
    expect(both.code, printed(both)).toBe(2);
    const notAllowed = await runCli(['machine', 'upgrade', '--env', 'Production'], ci.env);
    expect(notAllowed.code, printed(notAllowed)).toBe(5);
  });
});
