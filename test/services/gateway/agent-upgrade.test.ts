/**
 * Upgrades from the control plane with the real agent process, installed as install.sh lays it out
 * and run under a restart loop standing in for systemd's Restart=always (helpers/supervised-agent.ts):
 * a bundle that fails its checksum, and one that does not start, leave the old agent running (same
 * process, same release, still taking tasks) and are reported; a good one is swapped in and the
 * agent comes back with the new version. The gateway is restarted on the same port between the
 * cases, as a control plane is when it is upgraded to ship another bundle.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, EventSubject, type Bus } from '../../../services/bus/index.ts';
import { createLogger, freePort } from '../../../services/core/index.ts';
import type { AgentBundle, Gateway } from '../../../services/gateway/index.ts';
import { agentBundle } from '../../helpers/agent-bundle.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import {
  buildBundle,
  readBundle,
  superviseInstalledAgent,
  type BuiltBundle,
  type SupervisedAgent,
} from '../../helpers/supervised-agent.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { FakeAgentPort, task, testGateway } from './harness.ts';

let t: TestContext;
let bus: Bus;
let gateway: Gateway | null = null;
let gatewayPort: number;
let agent: SupervisedAgent;
let machineId: string;
let oldBundle: BuiltBundle;
let newBundle: BuiltBundle;
const port = new FakeAgentPort();

async function serve(bundle: AgentBundle): Promise<void> {
  await gateway?.stop();
  gateway = testGateway(t, bus, port, { heartbeat: 500, agentBundle: bundle });
  await gateway.start(gatewayPort, '127.0.0.1');
}

const asShipped = (b: BuiltBundle): AgentBundle => ({
  version: b.version,
  archiveName: b.archive,
  sha256: b.sha256,
  bytes: b.bytes,
});

async function askUpgrade(version: string): Promise<void> {
  port.upgrades.set(machineId, version);
  await bus.publishEvent(EventSubject.agentUpgrades, { v: 1, type: 'agents.upgrade', machineIds: [machineId] });
}

const reportsOf = (version: string) =>
  port.upgradeReports.filter((r) => r.machineId === machineId && r.report.version === version).map((r) => r.report);

const withOutput = (error: unknown): never => {
  throw new Error(`${(error as Error).message}\nagent output:\n${agent.output()}`);
};

let taskCounter = 0;
/** Offers a task and waits for its result: the agent takes work. */
async function runsATask(): Promise<void> {
  const taskId = `upgrade-task-${++taskCounter}`;
  port.tasks.set(machineId, [task(taskId, { script: `echo ran ${taskId}` })]);
  await bus.publishEvent(EventSubject.tasksDispatched('deployment-1'), {
    v: 1,
    type: 'tasks.dispatched',
    deploymentId: 'deployment-1',
    tasks: [{ taskId, machineId }],
  });
  const result = await waitFor(() => port.callsOf('recordResult', machineId).find((c) => c.taskId === taskId), {
    timeoutMs: 20_000,
    description: `result of ${taskId}`,
  }).catch(withOutput);
  expect(result.result.outcome).toBe('SUCCEEDED');
  port.tasks.delete(machineId);
}

beforeAll(async () => {
  t = await testApp();
  bus = await createBus({ natsUrl: null, logger: createLogger('silent') });
  oldBundle = readBundle(path.dirname(agentBundle()));
  newBundle = buildBundle('0.1.1');
  expect(newBundle.version).not.toBe(oldBundle.version);
  gatewayPort = await freePort();
  await serve(asShipped(oldBundle));
  const created = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: 'upgraded-agent' });
  machineId = created.body.machineId as string;
  agent = superviseInstalledAgent(oldBundle, {
    GANTRY_SERVER: `127.0.0.1:${gatewayPort}`,
    GANTRY_AGENT_TOKEN: created.body.registrationToken as string,
    GANTRY_AGENT_INSECURE: '1',
    GANTRY_AGENT_LOG_LEVEL: 'info',
  });
  await waitFor(() => port.callsOf('connected', machineId).length > 0, {
    timeoutMs: 30_000,
    description: 'the agent to connect',
  }).catch(withOutput);
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await bus?.close();
});

describe('agent upgrades from the control plane (real agent under a restart loop)', () => {
  it('leaves the old agent running when the bundle fails its checksum, and says so', async () => {
    // The bytes of 0.1.1 announced with another sha256: what a corrupted transfer looks like.
    await serve({ ...asShipped(newBundle), sha256: 'f'.repeat(64) });
    await waitFor(() => port.callsOf('connected', machineId).length >= 2, { timeoutMs: 30_000 }).catch(withOutput);
    await askUpgrade(newBundle.version);
    const failed = await waitFor(() => reportsOf(newBundle.version).find((r) => r.state === 'FAILED'), {
      timeoutMs: 30_000,
      description: 'the FAILED report',
    }).catch(withOutput);
    expect(failed.message).toMatch(/failed its checksum \(expected sha256 f{64}, got [0-9a-f]{64}\)/);
    expect(reportsOf(newBundle.version).map((r) => r.state)).toEqual(['STARTED', 'FAILED']);
    expect(agent.starts()).toBe(1);
    expect(agent.currentRelease()).toBe(`${oldBundle.version}-${oldBundle.sha256.slice(0, 12)}`);
    await runsATask();
    expect(agent.starts()).toBe(1);
  });

  it('leaves the old agent running when the new one does not start (its self-test fails)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-broken-bundle-'));
    try {
      writeFileSync(path.join(dir, 'gantry-agent.mjs'), "console.error('broken build'); process.exit(3);\n");
      const archive = path.join(dir, 'gantry-agent-0.1.2.tar.gz');
      tar.c({ gzip: true, file: archive, cwd: dir, sync: true, portable: true }, ['gantry-agent.mjs']);
      const bytes = (await import('node:fs')).readFileSync(archive);
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const connectedBefore = port.callsOf('connected', machineId).length;
      await serve({ version: '0.1.2', archiveName: 'gantry-agent-0.1.2.tar.gz', sha256, bytes });
      await waitFor(() => port.callsOf('connected', machineId).length > connectedBefore, { timeoutMs: 30_000 }).catch(
        withOutput,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await askUpgrade('0.1.2');
    const failed = await waitFor(() => reportsOf('0.1.2').find((r) => r.state === 'FAILED'), {
      timeoutMs: 30_000,
      description: 'the FAILED report',
    }).catch(withOutput);
    expect(failed.message).toMatch(/the new agent did not start .*broken build/);
    expect(agent.starts()).toBe(1);
    expect(agent.currentRelease()).toBe(`${oldBundle.version}-${oldBundle.sha256.slice(0, 12)}`);
    await runsATask();
  });

  it('swaps a good bundle in after its running task, and the agent comes back with the new version', async () => {
    const connectedBefore = port.callsOf('connected', machineId).length;
    await serve(asShipped(newBundle));
    await waitFor(() => port.callsOf('connected', machineId).length > connectedBefore, { timeoutMs: 30_000 }).catch(
      withOutput,
    );
    // A step running when the upgrade is asked for finishes first, on the old agent.
    port.tasks.set(machineId, [task('long-step', { script: 'sleep 2; echo finished before the upgrade' })]);
    await bus.publishEvent(EventSubject.tasksDispatched('deployment-1'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'deployment-1',
      tasks: [{ taskId: 'long-step', machineId }],
    });
    await waitFor(() => /"taskId":"long-step"[^\n]*"msg":"task accepted"/.test(agent.output()), {
      timeoutMs: 20_000,
      description: 'the long step to start',
    }).catch(withOutput);
    await askUpgrade(newBundle.version);
    const back = await waitFor(
      () =>
        port.callsOf('connected', machineId).find((c) => c.info.agentVersion === newBundle.version) ??
        (agent.starts() > 2 ? withOutput(new Error('the agent restarted more than once')) : undefined),
      { timeoutMs: 60_000, description: `the agent back as ${newBundle.version}` },
    ).catch(withOutput);
    expect(back.info.agentVersion).toBe('0.1.1');
    expect(agent.starts()).toBe(2);
    expect(agent.currentRelease()).toBe(`0.1.1-${newBundle.sha256.slice(0, 12)}`);
    // The step was not cut short: its result is SUCCEEDED (sent by the old agent, or re-sent by the new one).
    const longStep = port.callsOf('recordResult', machineId).find((c) => c.taskId === 'long-step');
    expect(longStep?.result).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0 });
    // The one failure of 0.1.1 is the first case's checksum; this upgrade reported none.
    expect(reportsOf(newBundle.version).filter((r) => r.state === 'FAILED')).toHaveLength(1);
    await runsATask();
  });
});
