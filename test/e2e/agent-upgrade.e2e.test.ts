/**
 * An agent upgraded from the control plane, end to end: a control plane shipping agent 0.1.1, a
 * real 0.1.0 agent installed as install.sh lays it out and run under a restart loop standing in
 * for systemd's Restart=always (helpers/supervised-agent.ts). POST /api/machine/upgrade in the
 * middle of a step: the step finishes on the old agent, the agent swaps itself and comes back as
 * 0.1.1, the machine reads Succeeded and Online, and the next deployment runs on the new agent.
 * (A bundle failing its checksum or its self-test: test/services/gateway/agent-upgrade.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { buildBundle, readBundle, superviseInstalledAgent, type SupervisedAgent } from '../helpers/supervised-agent.ts';
import { waitFor } from '../helpers/wait-for.ts';
import path from 'node:path';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  waitForDeployment,
  workspaceOf,
  type Api,
} from './harness.ts';

let client: Api;
let agent: SupervisedAgent | undefined;
let machineId: string;
let workspaceId: string;
let staging: string;
let lifecycleId: string;

let planeOutput: () => string = () => '';
const withOutput = (error: unknown): never => {
  throw new Error(
    `${(error as Error).message}\nagent output:\n${agent?.output() ?? ''}\ncontrol plane output:\n${planeOutput()
      .split('\n')
      .filter((line) => !/"msg":"(incoming request|request completed)"/.test(line))
      .join('\n')
      .slice(-8000)}`,
  );
};

beforeAll(async () => {
  const oldBundle = readBundle(path.dirname(agentBundle()));
  const newBundle = buildBundle('0.1.1');
  const plane = await startControlPlane({ env: { GANTRY_AGENT_BUNDLE_DIR: newBundle.dir, GANTRY_LOG_LEVEL: 'info' } });
  client = api(plane.url);
  planeOutput = plane.output;
  const workspace = await workspaceOf(client);
  workspaceId = workspace.workspaceId;
  staging = workspace.environments.Staging!;
  lifecycleId = workspace.defaultLifecycleId;
  const created = await client.post('/api/machine', { workspaceId, name: 'upgraded', environmentIds: [staging] });
  machineId = created.body.machineId;
  agent = superviseInstalledAgent(oldBundle, {
    GANTRY_SERVER: plane.grpcAddress,
    GANTRY_AGENT_TOKEN: created.body.registrationToken,
    GANTRY_AGENT_CA_FINGERPRINT: created.body.caFingerprint,
    GANTRY_AGENT_LOG_LEVEL: 'info',
  });
  await waitFor(async () => (await client.get('/api/machine/details', { machineId })).body.status === 'Online', {
    timeoutMs: 60_000,
    description: 'the agent online',
  }).catch(withOutput);
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  await cleanup();
});

describe('upgrading an agent from the control plane', () => {
  it('lets the running step finish, then the agent comes back as the shipped version', async () => {
    expect((await client.get('/api/machine/details', { machineId })).body.agentVersion).toBe('0.1.0');
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Slow', script: 'echo "step started"; sleep 3; echo "step ended on $(hostname)"' },
    ]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    await waitFor(async () => (await logsOf(client, deploymentId!)).some((l) => l.Data === 'step started'), {
      timeoutMs: 30_000,
      description: 'the step to start',
    }).catch(withOutput);

    const asked = await client.post('/api/machine/upgrade', { workspaceId, machineIds: [machineId] });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toMatchObject({ version: '0.1.1', machines: [{ machineId, outcome: 'Requested' }] });

    const status = await waitForDeployment(client, deploymentId!, 60_000);
    expect(status.Status).toBe('Completed');
    const logs = await logsOf(client, deploymentId!);
    expect(logs.filter((l) => l.Data.startsWith('step ended on '))).toHaveLength(1);

    let last: unknown;
    const machine = await waitFor(
      async () => {
        const body = (await client.get('/api/machine/details', { machineId })).body;
        last = body;
        if (body.upgrade?.state === 'Failed') throw new Error(`the upgrade failed: ${JSON.stringify(body)}`);
        return body.agentVersion === '0.1.1' && body.status === 'Online' ? body : null;
      },
      { timeoutMs: 60_000, description: 'the agent back as 0.1.1' },
    ).catch((error: unknown) =>
      withOutput(new Error(`${(error as Error).message}; the machine: ${JSON.stringify(last)}`)),
    );
    expect(machine).toMatchObject({
      health: 'Online',
      healthReasons: [],
      upgrade: { version: '0.1.1', state: 'Succeeded' },
    });
    expect(agent!.starts()).toBe(2);
    expect(agent!.currentRelease()).toMatch(/^0\.1\.1-[0-9a-f]{12}$/);
    expect(agent!.output()).toContain('upgraded: exiting for the supervisor to start the new release');

    // The new agent takes work.
    const [next] = await releaseAndDeploy(client, projectId, ['Staging'], '1.0.1');
    expect((await waitForDeployment(client, next!, 60_000)).Status).toBe('Completed');
  }, 180_000);
});
