/**
 * End to end: release governance (issue #15) with a real control plane and a real agent running
 * bash — a deployment awaiting two approvals followed by the vendor SDKs' polling loops, a freeze
 * holding an automatic phase deployment until it ends, and rollbacks picking the right release.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  startControlPlane,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';
import { E2E_MODES } from './modes.ts';

const SCRIPT = [
  'echo "version #{CONTEXT.ReleaseVersion} in #{CONTEXT.EnvironmentName}"',
  'if [ "#{CONTEXT.ReleaseVersion}" = "3.0.0" ]; then echo "3.0.0 is broken" >&2; exit 1; fi',
].join('\n');

const KNOWN_STATUSES = ['Queued', 'Running', 'Completed', 'Failed', 'Cancelled', 'Validating', 'AwaitingSlot'];

interface SdkLog {
  Id: string;
  Data: string;
  LogLevel: string;
  CreatedUtcTick: string;
}

/**
 * The TeamCity plugin's loop (clients.md): `getLogsAfter` = the last log item's CreatedUtcTick,
 * never skipLogs; done on `completed`, failed on `failed`/`cancelled` (any case); anything else,
 * known or not, polls on. Reads only `status.Status` and the log items' fields it has.
 */
async function teamCityPoll(client: Api, deploymentId: string, seen: string[]) {
  const logs: SdkLog[] = [];
  for (;;) {
    const query: Record<string, string> = { deploymentId };
    const last = logs.at(-1);
    if (last) query.getLogsAfter = last.CreatedUtcTick;
    const response = await client.get('/api/deployment', query);
    if (response.status !== 200) throw new Error(`GET /api/deployment answered ${response.status}`);
    const status = String(response.body.status.Status);
    seen.push(status);
    logs.push(...(response.body.logs as SdkLog[]));
    if (['completed', 'failed', 'cancelled'].includes(status.toLowerCase())) return { status, logs };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The PowerShell SDK's Start-JawsCheckDeploymentState: skipLogs=False (capital F), then
 * getLogsAfter=<status.LastLogDateTick> (sent empty while it is null); stops on Completed,
 * Failed or Cancelled.
 */
async function powerShellPoll(client: Api, deploymentId: string, seen: string[]) {
  const logs: SdkLog[] = [];
  let lastTick: string | null | undefined;
  for (;;) {
    const query: Record<string, string> = { deploymentId, skipLogs: 'False' };
    if (lastTick !== undefined) query.getLogsAfter = lastTick === null ? '' : String(lastTick);
    const response = await client.get('/api/deployment', query);
    if (response.status !== 200) throw new Error(`GET /api/deployment answered ${response.status}: ${response.text}`);
    const status = String(response.body.status.Status);
    seen.push(status);
    logs.push(...(response.body.logs as SdkLog[]));
    lastTick = response.body.status.LastLogDateTick as string | null;
    if (['Completed', 'Failed', 'Cancelled'].includes(status)) return { status, logs };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.each(E2E_MODES)('release governance end to end on $name (one agent)', (mode) => {
  let plane: ControlPlane;
  let admin: Api;
  let workspaceId: string;
  const environments: Record<string, string> = {};

  beforeAll(async () => {
    plane = await startControlPlane(await mode.options());
    admin = api(plane.url);
    workspaceId = (await workspaceOf(admin)).workspaceId;
    for (const name of ['Gov Approve', 'Gov Dev', 'Gov Prod', 'Gov RB1', 'Gov RB2']) {
      const created = await admin.post('/api/environment', { workspaceId, name });
      expect(created.status, created.text).toBe(200);
      environments[name] = created.body.environmentId;
    }
    await startMachines(plane, admin, workspaceId, [
      { name: 'gov-agent', environmentIds: Object.values(environments) },
    ]);
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  async function account(roles: Array<{ role: string }>): Promise<Api> {
    const created = await admin.post('/api/service-account', {
      workspaceId,
      name: `gov ${Math.random().toString(16).slice(2, 8)}`,
      roles,
    });
    expect(created.status, created.text).toBe(200);
    const key = await admin.post('/api/service-account/api-key', { serviceAccountId: created.body.serviceAccountId });
    return api(plane.url, { id: created.body.serviceAccountId, key: key.body.apiKey });
  }

  async function release(projectId: string, version: string): Promise<string> {
    const created = await admin.post('/api/release', { projectId, version });
    expect(created.status, created.text).toBe(200);
    return created.body.releaseId;
  }

  async function deploy(releaseId: string, environmentName: string): Promise<string> {
    const deployed = await admin.post('/api/release/deploy', { releaseId, environments: [environmentName] });
    expect(deployed.status, deployed.text).toBe(200);
    return deployed.body.deploymentIds[0];
  }

  const versionLines = async (deploymentId: string) =>
    (await logsOf(admin, deploymentId)).map((l) => l.Data).filter((d) => d.startsWith('version '));

  it('keeps a deployment Queued for two approvers while the SDKs poll it, then runs it', async () => {
    const environmentId = environments['Gov Approve']!;
    expect((await admin.put('/api/environment', { environmentId, requiredApprovals: 2 })).status).toBe(200);
    const requester = await account([{ role: 'Deploy' }, { role: 'View' }, { role: 'ApproveDeployments' }]);
    const [first, second] = [
      await account([{ role: 'ApproveDeployments' }]),
      await account([{ role: 'ApproveDeployments' }]),
    ];
    const { projectId } = await bashProject(admin, workspaceId, (await workspaceOf(admin)).defaultLifecycleId, [
      { name: 'Announce', script: SCRIPT },
    ]);
    // The project's lifecycle does not hold Gov Approve: deploy with no lifecycle instead.
    expect((await admin.put('/api/project', { projectId, lifecycleId: null })).status).toBe(200);
    const releaseId = await release(projectId, '1.0.0');
    // As the PowerShell SDK deploys: the obsolete single environmentName.
    const deployed = await requester.post('/api/release/deploy', { releaseId, environmentName: 'Gov Approve' });
    expect(deployed.status, deployed.text).toBe(200);
    const deploymentId = deployed.body.deploymentIds[0] as string;

    const seenByTeamCity: string[] = [];
    const seenByPowerShell: string[] = [];
    const polls = Promise.all([
      teamCityPoll(requester, deploymentId, seenByTeamCity),
      powerShellPoll(requester, deploymentId, seenByPowerShell),
    ]);
    const waiting = await waitFor(
      async () => {
        const response = await requester.get('/api/deployment', { deploymentId, skipLogs: 'True' });
        return response.body.waitingReason === 'awaiting approval (0 of 2)' ? response.body : null;
      },
      { timeoutMs: 20_000, intervalMs: 100, description: 'the deployment to await approval' },
    );
    expect(waiting.status.Status).toBe('Queued');
    const own = await requester.post('/api/deployment/approve', { deploymentId });
    expect(own.status).toBe(400);
    expect((await first.post('/api/deployment/approve', { deploymentId, comment: 'ok by me' })).status).toBe(200);
    await waitFor(
      async () =>
        (await requester.get('/api/deployment', { deploymentId, skipLogs: 'True' })).body.waitingReason ===
        'awaiting approval (1 of 2)',
      { timeoutMs: 20_000, intervalMs: 100, description: 'one approval counted' },
    );
    expect((await second.post('/api/deployment/approve', { deploymentId })).status).toBe(200);

    const [teamCity, powerShell] = await polls;
    expect(teamCity.status).toBe('Completed');
    expect(powerShell.status).toBe('Completed');
    for (const seen of [seenByTeamCity, seenByPowerShell]) {
      expect(seen[0]).toBe('Queued');
      expect(seen.every((s) => KNOWN_STATUSES.includes(s))).toBe(true);
    }
    // Each loop saw every line exactly once: the waiting and approval lines, then the script's.
    for (const { logs } of [teamCity, powerShell]) {
      const data = logs.map((l) => l.Data);
      expect(new Set(logs.map((l) => l.Id)).size).toBe(logs.length);
      expect(data.filter((d) => d === 'version 1.0.0 in Gov Approve')).toHaveLength(1);
      expect(data).toContain('Waiting: awaiting approval (0 of 2)');
      expect(data.filter((d) => d.startsWith('Approved by '))).toHaveLength(2);
      expect(data.indexOf('Waiting: awaiting approval (0 of 2)')).toBeLessThan(
        data.indexOf('version 1.0.0 in Gov Approve'),
      );
    }
  }, 90_000);

  it('holds an automatic phase deployment while its environment is frozen and starts it when the freeze ends', async () => {
    const lifecycle = await admin.post('/api/lifecycle', {
      workspaceId,
      name: `Gov lifecycle ${Math.random().toString(16).slice(2, 8)}`,
      phases: [
        { name: 'Dev', environments: [{ environmentId: environments['Gov Dev'], howToTrigger: 'Manual' }] },
        { name: 'Prod', environments: [{ environmentId: environments['Gov Prod'], howToTrigger: 'Automatic' }] },
      ],
    });
    expect(lifecycle.status, lifecycle.text).toBe(200);
    const { projectId } = await bashProject(admin, workspaceId, lifecycle.body.lifecycleId, [
      { name: 'Announce', script: SCRIPT },
    ]);
    const releaseId = await release(projectId, '1.0.0');
    const endUtc = new Date(Date.now() + 20_000).toISOString();
    const freeze = await admin.post('/api/deployment/freeze', {
      workspaceId,
      name: 'Release week',
      environmentIds: [environments['Gov Prod']],
      startUtc: new Date(Date.now() - 60_000).toISOString(),
      endUtc,
    });
    expect(freeze.status, freeze.text).toBe(200);

    expect((await waitForDeployment(admin, await deploy(releaseId, 'Gov Dev'), 30_000)).Status).toBe('Completed');
    const refused = await admin.post('/api/release/promote', { projectId, environments: ['Gov Prod'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("frozen by 'Release week'");

    const automatic = await waitFor(
      async () => {
        const list = await admin.get('/api/deployment/list', { projectId });
        return (
          list.body.deployments as Array<{ deploymentId: string; environmentName: string; automatic: boolean }>
        ).find((d) => d.environmentName === 'Gov Prod' && d.automatic);
      },
      { timeoutMs: 15_000, intervalMs: 200, description: 'the automatic Prod deployment' },
    );
    const held = await waitFor(
      async () => {
        const body = (await admin.get('/api/deployment', { deploymentId: automatic.deploymentId, skipLogs: 'True' }))
          .body;
        return body.waitingReason ? body : null;
      },
      { timeoutMs: 15_000, intervalMs: 100, description: 'the held deployment to say why' },
    );
    expect(held.status.Status).toBe('Queued');
    expect(held.waitingReason).toBe(`frozen by 'Release week' until ${endUtc}`);
    expect((await waitForDeployment(admin, automatic.deploymentId, 60_000)).Status).toBe('Completed');
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(endUtc));
    expect(await versionLines(automatic.deploymentId)).toEqual(['version 1.0.0 in Gov Prod']);
  }, 120_000);

  it('rolls back to the right release after two successful deployments and after a failed one', async () => {
    const { projectId } = await bashProject(admin, workspaceId, (await workspaceOf(admin)).defaultLifecycleId, [
      { name: 'Announce', script: SCRIPT },
    ]);
    expect((await admin.put('/api/project', { projectId, lifecycleId: null })).status).toBe(200);
    const releases: Record<string, string> = {};
    for (const version of ['1.0.0', '2.0.0', '3.0.0']) releases[version] = await release(projectId, version);
    const run = async (version: string, environmentName: string) =>
      (await waitForDeployment(admin, await deploy(releases[version]!, environmentName), 30_000)).Status;

    expect(await run('1.0.0', 'Gov RB1')).toBe('Completed');
    expect(await run('2.0.0', 'Gov RB1')).toBe('Completed');
    const back = await admin.post('/api/release/rollback', { projectId, environmentName: 'Gov RB1' });
    expect(back.status, back.text).toBe(200);
    expect(back.body).toMatchObject({ version: '1.0.0', rolledBackFromVersion: '2.0.0' });
    expect((await waitForDeployment(admin, back.body.deploymentId, 30_000)).Status).toBe('Completed');
    expect(await versionLines(back.body.deploymentId)).toEqual(['version 1.0.0 in Gov RB1']);

    expect(await run('1.0.0', 'Gov RB2')).toBe('Completed');
    expect(await run('2.0.0', 'Gov RB2')).toBe('Completed');
    expect(await run('3.0.0', 'Gov RB2')).toBe('Failed');
    const afterFailure = await admin.post('/api/release/rollback', { projectId, environmentName: 'Gov RB2' });
    expect(afterFailure.status, afterFailure.text).toBe(200);
    expect(afterFailure.body).toMatchObject({ version: '2.0.0', rolledBackFromVersion: '3.0.0' });
    expect((await waitForDeployment(admin, afterFailure.body.deploymentId, 30_000)).Status).toBe('Completed');
    expect(await versionLines(afterFailure.body.deploymentId)).toEqual(['version 2.0.0 in Gov RB2']);

    const listed = await admin.get('/api/deployment/list', { projectId });
    const rollbacks = (listed.body.deployments as Array<{ deploymentId: string; rollback: boolean }>)
      .filter((d) => d.rollback)
      .map((d) => d.deploymentId)
      .sort();
    expect(rollbacks).toEqual([back.body.deploymentId, afterFailure.body.deploymentId].sort());
  }, 120_000);
});
