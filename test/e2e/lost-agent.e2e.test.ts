/**
 * A machine whose agent disappears mid-step: the deployment's log says at once that the machine
 * went offline and what it waits for, the machine reads Offline at once, and the step fails once
 * GANTRY_AGENT_LOST_TIMEOUT_SECONDS passes (a setting; 120 s by default) instead of hanging.
 * An agent that comes back in time is announced, and its own outcome counts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  startAgent,
  startControlPlane,
  startedAgents,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

const LOST_SECONDS = 4;

describe('a machine lost in the middle of a step', () => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  let staging: string;

  beforeAll(async () => {
    plane = await startControlPlane({ env: { GANTRY_AGENT_LOST_TIMEOUT_SECONDS: String(LOST_SECONDS) } });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    staging = workspace.environments.Staging!;
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  async function statusOf(machineId: string): Promise<string> {
    const list = await client.get('/api/machine', { workspaceId, take: '500' });
    return list.body.machines.find((m: { machineId: string }) => m.machineId === machineId).status;
  }

  it('says at once that the machine is offline and fails the step after the timeout, not after 120 s', async () => {
    const ids = await startMachines(plane, client, workspaceId, [{ name: 'doomed', environmentIds: [staging] }]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Long', script: 'echo started\nsleep 60' },
    ]);
    const release = await client.post('/api/release', { projectId, version: '1.0.0' });
    const deployed = await client.post('/api/release/deploy', {
      releaseId: release.body.releaseId,
      environments: ['Staging'],
    });
    const deploymentId = deployed.body.deploymentIds[0] as string;
    await waitFor(async () => (await logsOf(client, deploymentId)).some((l) => l.Data === 'started'), {
      timeoutMs: 30_000,
      description: 'the step to start',
    });

    const killedAt = Date.now();
    startedAgents.get('doomed')!.child.kill('SIGKILL');
    const offline = await waitFor(
      async () => (await logsOf(client, deploymentId)).find((l) => l.Data.includes("Machine 'doomed' went offline")),
      { timeoutMs: 10_000, intervalMs: 100, description: 'the offline line' },
    );
    expect(offline.Data).toBe(
      `Machine 'doomed' went offline (its agent disconnected): waiting up to ${LOST_SECONDS} s for it to reconnect; 'Long' fails there if it does not`,
    );
    expect(Date.now() - killedAt).toBeLessThan(5_000);
    expect(await statusOf(ids.doomed!)).toBe('Offline');

    const final = await waitForDeployment(client, deploymentId, 60_000);
    expect(final.Status).toBe('Failed');
    // Independent of the waits above: the failure took seconds, not the former 120 s.
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    const lines = (await logsOf(client, deploymentId)).map((l) => l.Data);
    expect(lines).toContain(
      `Long on doomed: Lost contact with the agent on 'doomed': offline for more than ${LOST_SECONDS} s`,
    );
  }, 120_000);

  it('announces an agent that comes back within the timeout, and its own outcome counts', async () => {
    const ids = await startMachines(plane, client, workspaceId, [{ name: 'flaky', environmentIds: [staging] }]);
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Short', script: 'echo begun\nsleep 2\necho done' },
    ]);
    const release = await client.post('/api/release', { projectId, version: '1.0.0' });
    const deployed = await client.post('/api/release/deploy', {
      releaseId: release.body.releaseId,
      environments: ['Staging'],
    });
    const deploymentId = deployed.body.deploymentIds[0] as string;
    await waitFor(async () => (await logsOf(client, deploymentId)).some((l) => l.Data === 'begun'), {
      timeoutMs: 30_000,
      description: 'the step to start',
    });
    const first = startedAgents.get('flaky')!;
    first.child.kill('SIGKILL');
    await waitFor(async () => (await statusOf(ids.flaky!)) === 'Offline', { timeoutMs: 10_000, intervalMs: 100 });
    // The same machine's agent (same home, same identity) starts again before the timeout.
    startedAgents.set('flaky', startAgent([plane.grpcAddress], '', { GANTRY_AGENT_HOME: first.home }));
    const final = await waitForDeployment(client, deploymentId, 60_000);
    const lines = (await logsOf(client, deploymentId)).map((l) => l.Data);
    expect(lines.some((l) => /^Machine 'flaky' is back online after \d+ s; 'Short' goes on there$/.test(l))).toBe(true);
    // A restarted agent never re-runs a step: its own outcome is that the step was interrupted.
    expect(final.Status).toBe('Failed');
    expect(lines, lines.join('\n')).toContain('Short on flaky: failed: agent restarted during the step');
    expect(lines.some((l) => l.includes('Lost contact'))).toBe(false);
    expect(await statusOf(ids.flaky!)).toBe('Online');
  }, 120_000);
});
