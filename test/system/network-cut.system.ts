/**
 * An agent behind a cut network link: the agent runs in its own network namespace, joined to the
 * control plane by a veth pair, and the link is taken down (`ip link set … down`) in the middle of
 * a step — no RST, no FIN: a pulled cable. The machine reads Offline within 30 s and the
 * deployment's log says it waits for that machine. When the link returns within the grace period
 * (GANTRY_AGENT_LOST_TIMEOUT_SECONDS) the step's real outcome counts and no line is lost or
 * doubled; when it does not, the step fails with a clear line instead of hanging, and the agent's
 * late result is logged, not applied.
 */
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { createNetworkHost, type NetworkHost } from '../helpers/netns.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  tempDir,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from '../e2e/harness.ts';

const GRACE_SECONDS = 45;
const LINES = 60;

describe('an agent behind a cut network link', () => {
  let net: NetworkHost;
  let plane: ControlPlane;
  let client: Api;
  let workspaceId: string;
  let lifecycleId: string;
  let machineId: string;
  let agent: ChildProcess;
  let agentOutput = '';

  beforeAll(async () => {
    net = createNetworkHost();
    plane = await startControlPlane({
      env: { GANTRY_HOST: '0.0.0.0', GANTRY_AGENT_LOST_TIMEOUT_SECONDS: String(GRACE_SECONDS) },
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    lifecycleId = workspace.defaultLifecycleId;
    const created = await client.post('/api/machine', {
      workspaceId,
      name: 'behind-veth',
      environmentIds: [workspace.environments.Staging!],
    });
    machineId = created.body.machineId;
    const grpcPort = plane.grpcAddress.split(':')[1]!;
    agent = net.spawn(process.execPath, [agentBundle()], {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      GANTRY_SERVER: `${net.hostAddress}:${grpcPort}`,
      GANTRY_AGENT_TOKEN: created.body.registrationToken,
      GANTRY_AGENT_CA_FINGERPRINT: created.body.caFingerprint,
      GANTRY_AGENT_HOME: tempDir('gantry-netns-agent-'),
      GANTRY_AGENT_LOG_LEVEL: 'info',
    });
    const append = (chunk: Buffer) => (agentOutput = (agentOutput + chunk.toString()).slice(-50_000));
    agent.stdout?.on('data', append);
    agent.stderr?.on('data', append);
    await waitFor(async () => (await status()) === 'Online', { timeoutMs: 30_000, intervalMs: 250 });
  }, 120_000);

  afterAll(async () => {
    agent?.kill('SIGKILL');
    net?.remove();
    await cleanup();
  });

  const status = async () =>
    (
      (await client.get('/api/machine', { workspaceId, take: '10' })).body.machines as Array<{
        machineId: string;
        status: string;
        health: string;
      }>
    ).find((m) => m.machineId === machineId)?.status;

  /** A step printing `line 1` … `line N` every 250 ms; returns the deployment once it has begun. */
  async function deployCounting(version: string): Promise<string> {
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Count', script: `for i in $(seq 1 ${LINES}); do echo "line $i"; sleep 0.25; done` },
    ]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging'], version);
    await waitFor(async () => (await logsOf(client, deploymentId!)).some((l) => l.Data === 'line 3'), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the step to print',
    });
    return deploymentId!;
  }

  async function cutUntilOffline(deploymentId: string): Promise<number> {
    const cutAt = Date.now();
    net.cut();
    await waitFor(async () => (await status()) === 'Offline', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the machine to read Offline within 30 s of the cut',
    });
    const offlineAfterMs = Date.now() - cutAt;
    const waiting = await waitFor(
      async () =>
        (await logsOf(client, deploymentId)).find((l) => l.Data.includes("Machine 'behind-veth' went offline")),
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(waiting.Data).toBe(
      `Machine 'behind-veth' went offline (its agent disconnected): waiting up to ${GRACE_SECONDS} s for it to reconnect; 'Count' fails there if it does not`,
    );
    return offlineAfterMs;
  }

  it('link back within the grace period: the real outcome counts, every line exactly once, in order', async () => {
    const deploymentId = await deployCounting('1.0.0');
    const offlineAfterMs = await cutUntilOffline(deploymentId);
    expect(offlineAfterMs).toBeLessThan(30_000);
    console.log(`network-cut: Offline ${offlineAfterMs} ms after the cut`);
    net.restore();
    const final = await waitForDeployment(client, deploymentId, 90_000);
    const lines = (await logsOf(client, deploymentId)).map((l) => l.Data);
    expect(final.Status, lines.join('\n')).toBe('Completed');
    expect(lines.filter((l) => /^line \d+$/.test(l))).toEqual(Array.from({ length: LINES }, (_, i) => `line ${i + 1}`));
    expect(lines.some((l) => /^Machine 'behind-veth' is back online after \d+ s; 'Count' goes on there$/.test(l))).toBe(
      true,
    );
    expect(lines.some((l) => l.includes('Lost contact'))).toBe(false);
    await waitFor(async () => (await status()) === 'Online', { timeoutMs: 30_000, intervalMs: 250 });
  }, 180_000);

  it('link not back in time: the step fails with a clear line instead of hanging; the late result is logged, not applied', async () => {
    const deploymentId = await deployCounting('1.0.1');
    await cutUntilOffline(deploymentId);
    const final = await waitForDeployment(client, deploymentId, (GRACE_SECONDS + 30) * 1000);
    expect(final.Status).toBe('Failed');
    let lines = (await logsOf(client, deploymentId)).map((l) => l.Data);
    expect(lines).toContain(
      `Count on behind-veth: Lost contact with the agent on 'behind-veth': offline for more than ${GRACE_SECONDS} s`,
    );
    net.restore();
    lines = await waitFor(
      async () => {
        const now = (await logsOf(client, deploymentId)).map((l) => l.Data);
        return now.some((l) => l.startsWith("A late result from 'behind-veth' was not applied")) ? now : null;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the late result to be logged' },
    );
    expect(lines.find((l) => l.startsWith('A late result'))).toMatch(
      /^A late result from 'behind-veth' was not applied: 'Count' .* there, but had already ended as Failed$/,
    );
    expect((await waitForDeployment(client, deploymentId)).Status).toBe('Failed');
  }, 240_000);
});
