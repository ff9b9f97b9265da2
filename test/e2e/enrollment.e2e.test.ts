/**
 * A fleet from one template: agents started with the same enrollment key enroll themselves under
 * their own names, in the key's environments and tags, and deploy; the control plane's
 * GANTRY_BOOTSTRAP_ENROLLMENT_KEY needs no API call at all (docker-compose.yml uses it); a revoked
 * key enrolls nobody new, and the agent says why.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startAgent,
  startControlPlane,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

const BOOTSTRAP_KEY = 'compose-enrollment-key-0123456789abcdef';

describe('enrollment keys with real agents', () => {
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  let staging: string;

  beforeAll(async () => {
    plane = await startControlPlane({ env: { GANTRY_BOOTSTRAP_ENROLLMENT_KEY: BOOTSTRAP_KEY } });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    staging = workspace.environments.Staging!;
  }, 120_000);

  afterAll(async () => {
    await cleanup();
  });

  // Each test stops the agents it started (test/setup/leak-check.ts).
  const started: ChildProcess[] = [];
  const enrollAgent = (env: Record<string, string>) => {
    const agent = startAgent([plane.grpcAddress], '', env);
    started.push(agent.child);
    return agent;
  };
  afterEach(async () => {
    for (const child of started.splice(0)) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });

  const machines = async () =>
    (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
      machineId: string;
      name: string;
      status: string;
      tagIds: string[];
      environments: Array<{ name: string }>;
    }>;

  it('enrolls two agents with one key under their own names, and deploys to both', async () => {
    const tagId = (await client.post('/api/tag', { workspaceId, name: 'fleet' })).body.tagId;
    const key = await client.post('/api/machine/enrollment-key', {
      workspaceId,
      name: 'web fleet',
      environmentIds: [staging],
      tagIds: [tagId],
    });
    expect(key.status).toBe(200);
    for (const name of ['web-a', 'web-b'])
      enrollAgent({ GANTRY_AGENT_ENROLLMENT_KEY: key.body.enrollmentKey, GANTRY_AGENT_NAME: name });
    const fleet = await waitFor(
      async () => {
        const web = (await machines()).filter((m) => m.name.startsWith('web-') && m.status === 'Online');
        return web.length === 2 ? web : null;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'both agents enrolled and online' },
    );
    for (const m of fleet) {
      expect(m.tagIds).toEqual([tagId]);
      expect(m.environments.map((e) => e.name)).toEqual(['Staging']);
    }
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Hi', script: 'echo "hi from $GANTRY_MACHINE_NAME_PROBE$(basename $PWD)"' },
    ]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    expect((await waitForDeployment(client, deploymentId!)).Status).toBe('Completed');
    const targets = await client.get('/api/deployment/targets', { deploymentId: deploymentId! });
    const names = targets.body.steps[0].targets.map(
      (x: { machineName: string; status: string }) => `${x.machineName}:${x.status}`,
    );
    expect(names.sort()).toEqual(['web-a:Succeeded', 'web-b:Succeeded']);
    expect((await logsOf(client, deploymentId!)).filter((l) => l.Data.startsWith('hi from '))).toHaveLength(2);
  });

  it('enrolls with GANTRY_BOOTSTRAP_ENROLLMENT_KEY and no API call, under the host name by default', async () => {
    enrollAgent({ GANTRY_AGENT_ENROLLMENT_KEY: BOOTSTRAP_KEY, GANTRY_AGENT_NAME: 'compose-agent-1' });
    const machine = await waitFor(
      async () => (await machines()).find((m) => m.name === 'compose-agent-1' && m.status === 'Online'),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(machine.environments.map((e) => e.name).sort()).toEqual(['Production', 'Staging']);
  });

  it('a revoked key enrolls nobody new, and the agent exits saying why', async () => {
    const key = await client.post('/api/machine/enrollment-key', {
      workspaceId,
      name: 'gone',
      environmentIds: [staging],
    });
    expect(
      (await client.delete('/api/machine/enrollment-key', { enrollmentKeyId: key.body.enrollmentKeyId })).status,
    ).toBe(200);
    const machinesBefore = (await machines()).length;
    const agent = enrollAgent({ GANTRY_AGENT_ENROLLMENT_KEY: key.body.enrollmentKey });
    const code = await new Promise<number | null>((resolve) => agent.child.once('exit', (c) => resolve(c)));
    expect(code).toBe(1);
    expect(agent.output()).toContain(
      'The control plane refused the enrollment (The enrollment key is unknown, revoked or expired)',
    );
    expect(await machines()).toHaveLength(machinesBefore);
  });
});
