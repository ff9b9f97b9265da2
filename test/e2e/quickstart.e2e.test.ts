/**
 * The quickstart on one machine (README): the control plane started with --local-agent on the
 * embedded default also runs an agent on this computer, enrolled in the bootstrap workspace, so
 * the first deployment needs no second machine. A restart keeps the same machine (no duplicate,
 * no new token needed), and the control plane's secrets never reach a deployment script.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { agentBundle } from '../helpers/agent-bundle.ts';
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
  type ControlPlane,
} from './harness.ts';

/**
 * How long a local agent may take to read Online, and a test's own limit above it and the plane's
 * start (60 s each at most), so a slow start fails with what it waited on, not a bare timeout.
 */
const ONLINE_WITHIN_MS = 60_000;
const PLANE_TEST_MS = 150_000;

describe('npm start -- --local-agent', { timeout: PLANE_TEST_MS }, () => {
  afterAll(async () => {
    await cleanup();
  });

  const dataDir = tempDir('gantry-quickstart-');
  const start = (env: Record<string, string>) =>
    startControlPlane({ dataDir, env: { GANTRY_AGENT_BUNDLE_DIR: path.dirname(agentBundle()), ...env } });

  /**
   * Waits for the plane's local agent to read Online. When it does not, the error says what the
   * machine list last showed and carries the plane's output (its agent's log included): a slow
   * start must be told apart from an agent that never connects.
   */
  async function onlineMachines(plane: ControlPlane) {
    const client = api(plane.url);
    const { workspaceId } = await workspaceOf(client);
    let lastSeen = 'no answer yet';
    return waitFor(
      async () => {
        const machines = (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
          machineId: string;
          name: string;
          status: string;
          environments: Array<{ name: string }>;
        }>;
        lastSeen = JSON.stringify(machines.map(({ machineId, status }) => ({ machineId, status })));
        return machines.length === 1 && machines[0]!.status === 'Online' ? machines : null;
      },
      { timeoutMs: ONLINE_WITHIN_MS, intervalMs: 250, description: 'the local agent to come online' },
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\nmachines last seen: ${lastSeen}\nthe plane's output:\n${plane.output()}`);
    });
  }

  /**
   * SIGTERM stops the plane with exit code 0 and no error in its log: the local agent's
   * disconnect is recorded before the (embedded) database stops, not after.
   */
  async function stopCleanly(plane: ControlPlane) {
    const exited = new Promise<number | null>((resolve) => plane.child.once('exit', (code) => resolve(code)));
    plane.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    const errors = plane
      .output()
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line));
    expect(errors).toEqual([]);
  }

  let machineId: string;

  it('runs an agent on this computer in the bootstrap workspace, and a first deployment on it', async () => {
    const plane = await start({ GANTRY_LOCAL_AGENT: '1' });
    const [machine] = await onlineMachines(plane);
    machineId = machine!.machineId;
    expect(machine!.name).toBe(`local-${hostname()}`.slice(0, 66).replace(/[^A-Za-z0-9.-]/g, '-'));
    expect(machine!.environments.map((e) => e.name).sort()).toEqual(['Production', 'Staging']);

    const client = api(plane.url);
    const { workspaceId, defaultLifecycleId } = await workspaceOf(client);
    const { projectId } = await bashProject(client, workspaceId, defaultLifecycleId, [
      { name: 'Hello', script: 'echo "hello from $(hostname)"; env | grep -c -E "^(DATABASE_URL|GANTRY_)" || true' },
    ]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    expect((await waitForDeployment(client, deploymentId!)).Status).toBe('Completed');
    const lines = (await logsOf(client, deploymentId!)).map((l) => l.Data);
    expect(lines).toContain(`hello from ${hostname()}`);
    // No DATABASE_URL, no GANTRY_* (bootstrap key, master key) in the script's environment.
    expect(lines).toContain('0');

    await stopCleanly(plane);
  });

  it('keeps the same machine across a restart (argument form), with no duplicate', async () => {
    const plane = await startControlPlane({
      dataDir,
      env: { GANTRY_AGENT_BUNDLE_DIR: path.dirname(agentBundle()) },
      args: ['--local-agent'],
    });
    const machines = await onlineMachines(plane);
    expect(machines.map((m) => m.machineId)).toEqual([machineId]);
    await stopCleanly(plane); // it stops its local agent first (test/setup/leak-check.ts)
  });

  /** The PID in the embedded cluster's lock file, while that process lives. */
  function runningPostmaster(): number | null {
    const file = path.join(dataDir, 'pg', 'postmaster.pid');
    const pid = existsSync(file) ? Number.parseInt(readFileSync(file, 'utf8').split('\n', 1)[0]!, 10) : NaN;
    if (!Number.isInteger(pid)) return null;
    try {
      process.kill(pid, 0);
      return pid;
    } catch {
      return null;
    }
  }

  it('starts again after it was killed outright, stopping the PostgreSQL the killed run left behind, with its data kept', async () => {
    const killed = await start({});
    killed.child.kill('SIGKILL');
    await new Promise((resolve) => killed.child.once('exit', resolve));
    // As after the OOM killer: the database outlives its control plane and holds the cluster's lock.
    const orphan = runningPostmaster();
    expect(orphan).not.toBeNull();

    const plane = await start({});
    expect(runningPostmaster()).not.toBe(orphan);
    expect(plane.output()).toContain('stopping the embedded PostgreSQL an earlier run left running');
    const client = api(plane.url);
    const { workspaceId } = await workspaceOf(client);
    const machines = (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
      machineId: string;
    }>;
    expect(machines.map((m) => m.machineId)).toEqual([machineId]);
    await stopCleanly(plane);
  });

  it('refuses a second Gantry on the same data folder, and leaves the first one and its database running', async () => {
    const first = await start({});
    const postmaster = runningPostmaster();
    const second = await start({}).then(
      () => null,
      (error: unknown) => String(error),
    );
    expect(second).toMatch(/Another Gantry \(process \d+\) is using the data folder/);
    expect(runningPostmaster()).toBe(postmaster);
    const client = api(first.url);
    const { workspaceId } = await workspaceOf(client);
    expect((await client.get('/api/machine', { workspaceId, take: '100' })).status).toBe(200);
    await stopCleanly(first);
  });
});
