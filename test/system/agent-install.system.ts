/**
 * The one-line install, proven under a real systemd: a Debian bookworm tree booted with
 * systemd-nspawn --boot runs the exact command POST /api/machine answers, against a control plane
 * on this host. The unit is active, runs as gantry-agent with the hardening it declares, registers
 * and deploys; survives `systemctl restart`; upgrades in place when the script is run again (same
 * machine, new version); upgrades itself when the control plane asks (POST /api/machine/upgrade:
 * the agent swaps its release and exits, systemd starts the new one); and uninstalls without
 * leaving anything behind.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAgent } from '../../scripts/build-agent.ts';
import { agentBundle } from '../helpers/agent-bundle.ts';
import { createTestDatabase } from '../helpers/database.ts';
import { bootDebian, debianTree, type BootedHost } from '../helpers/nspawn.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { freePort } from '../../services/core/index.ts';
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

const UPGRADE_VERSION = '0.1.1-upgrade.1';
const REMOTE_UPGRADE_VERSION = '0.1.2-upgrade.2';

describe('curl … /api/agent/install.sh | sudo sh under a real systemd', () => {
  let host: BootedHost;
  let plane: ControlPlane;
  let client: Api;
  let databaseUrl: string;
  let ports: { http: number; grpc: number };
  let workspaceId: string;
  let staging: string;
  let lifecycleId: string;
  let machineId: string;
  let installCommand: string;

  const startPlane = (bundleDir: string) =>
    startControlPlane({
      databaseUrl,
      ports,
      // The upgrade test replaces the plane for the tests after it.
      forFile: true,
      env: { GANTRY_AGENT_BUNDLE_DIR: bundleDir, GANTRY_PUBLIC_URL: `http://127.0.0.1:${ports.http}` },
    });

  beforeAll(async () => {
    const tree = debianTree('systemd');
    databaseUrl = (await createTestDatabase()).url;
    const http = await freePort();
    ports = { http, grpc: await freePort([http]) };
    plane = await startPlane(path.dirname(agentBundle()));
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    staging = workspace.environments.Staging!;
    lifecycleId = workspace.defaultLifecycleId;
    host = await bootDebian(tree);
  }, 900_000);

  afterAll(async () => {
    await host?.stop();
    await cleanup();
  });

  const unitState = async () => (await host.run('systemctl is-active gantry-agent')).stdout.trim();
  const mainPid = async () => (await host.ok('systemctl show -p MainPID --value gantry-agent')).trim();
  const machine = async () =>
    (
      (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
        machineId: string;
        status: string;
        agentVersion: string | null;
        health: string;
        interpreters: string[] | null;
        freeDiskBytes: number | null;
        os: string | null;
      }>
    ).find((m) => m.machineId === machineId);

  async function deployAndRead(version: string): Promise<string> {
    const { projectId } = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Who', script: 'echo "ran as $(id -un) in $PWD"; touch /etc/gantry-should-not-write 2>&1 || true' },
    ]);
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging'], version);
    const status = await waitForDeployment(client, deploymentId!, 60_000);
    expect(status.Status).toBe('Completed');
    return (await logsOf(client, deploymentId!)).map((l) => l.Data).join('\n');
  }

  it('says what the host lacks: root, then a Node.js that is too old', async () => {
    const script = `curl -fsSL ${plane.url}/api/agent/install.sh`;
    const asNobody = await host.run(
      `${script} | runuser -u nobody -- sh -s -- --server 127.0.0.1:1 --token abcdefgh12`,
    );
    expect(asNobody.code).toBe(1);
    expect(asNobody.stderr).toMatch(/cannot install here; missing:\n {2}- root: run it as root/);
    await host.ok(`printf '#!/bin/sh\\necho 18.19.0\\n' > /usr/local/bin/node && chmod +x /usr/local/bin/node`);
    try {
      const oldNode = await host.run(`${script} | sh -s -- --server 127.0.0.1:1 --token abcdefgh12`);
      expect(oldNode.code).toBe(1);
      expect(oldNode.stderr).toContain('Node.js >= 20: /usr/local/bin/node is version 18.19.0');
    } finally {
      await host.ok('rm -f /usr/local/bin/node');
    }
    expect((await host.run('id gantry-agent')).code).not.toBe(0); // nothing was changed
  });

  it('installs with the one line POST /api/machine answers: a hardened unit, running as gantry-agent', async () => {
    const created = await client.post('/api/machine', { workspaceId, name: 'nspawn-host', environmentIds: [staging] });
    expect(created.status).toBe(200);
    machineId = created.body.machineId;
    installCommand = created.body.installCommand;
    expect(installCommand).toBe(
      `curl -fsSL ${plane.url}/api/agent/install.sh | sudo sh -s -- --server 127.0.0.1:${ports.grpc} --token ${created.body.registrationToken} --ca-fingerprint ${plane.caFingerprint}`,
    );
    const installed = await host.run(installCommand, { timeoutMs: 120_000 });
    expect(installed.stderr + installed.stdout).toContain('installed 0.1.0 and started it');
    expect(installed.code).toBe(0);

    expect(await unitState()).toBe('active');
    expect((await host.ok(`ps -o user= -p ${await mainPid()}`)).trim()).toBe('gantry-agent');
    expect((await host.ok('getent passwd gantry-agent')).trim()).toMatch(
      /:\/var\/lib\/gantry-agent:\/usr\/sbin\/nologin$/,
    );
    expect(
      (await host.ok('stat -c "%a %U" /var/lib/gantry-agent /etc/gantry-agent/agent.env')).trim().split('\n'),
    ).toEqual(['700 gantry-agent', '600 root']);
    const unit = await host.ok('systemctl cat gantry-agent');
    for (const line of [
      'Restart=always',
      'KillMode=mixed',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ReadWritePaths=/var/lib/gantry-agent',
      'PrivateTmp=yes',
      'User=gantry-agent',
    ])
      expect(unit).toContain(line);
    const verify = await host.run('systemd-analyze verify /etc/systemd/system/gantry-agent.service 2>&1');
    expect(verify.stdout).toBe('');
    expect(verify.code).toBe(0);

    await waitFor(async () => (await machine())?.status === 'Online', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the installed agent to register and come online',
    });
    // Its health, as the agent inside the sandbox sees its host.
    expect(await machine()).toMatchObject({ agentVersion: '0.1.0', health: 'Online', os: `linux ${process.arch}` });
    expect((await machine())?.interpreters).toEqual(['bash', 'sh', 'python3']);
    expect((await machine())?.freeDiskBytes).toBeGreaterThan(0);
    // Registered: the one-time token is dropped from agent.env on the next run; identity is in the home.
    expect((await host.ok('ls /var/lib/gantry-agent')).split('\n')).toContain('identity.json');
  });

  it('runs a deployment as gantry-agent, inside the sandbox it declares', async () => {
    const log = await deployAndRead('1.0.0');
    expect(log).toContain('ran as gantry-agent in /var/lib/gantry-agent/work/');
    expect(log).toMatch(/gantry-should-not-write.*Read-only file system/);
  });

  it('survives systemctl restart: a new process, the same machine, deploying again', async () => {
    const before = await mainPid();
    await host.ok('systemctl restart gantry-agent');
    await waitFor(async () => (await unitState()) === 'active' && (await mainPid()) !== before, {
      timeoutMs: 30_000,
      description: 'the unit to restart',
    });
    // The new process welcomed: until then the machine may still read Online from the old session,
    // whose end the server records a moment later, and a deployment then finds it offline.
    const pid = await mainPid();
    await waitFor(
      async () =>
        (await host.run(`journalctl _PID=${pid} -o cat --no-pager`)).stdout.includes('connected to the control plane'),
      { timeoutMs: 30_000, intervalMs: 250, description: 'the new process to connect' },
    );
    await waitFor(async () => (await machine())?.status === 'Online', { timeoutMs: 30_000, intervalMs: 250 });
    expect(await deployAndRead('1.0.1')).toContain('ran as gantry-agent');
  });

  it('upgrades in place when the line is run again: same identity, the new version', async () => {
    const newBuild = tempDir('gantry-agent-upgrade-');
    buildAgent(newBuild, { version: UPGRADE_VERSION });
    plane.child.kill('SIGTERM');
    await new Promise((resolve) => plane.child.once('exit', resolve));
    plane = await startPlane(newBuild);
    client = api(plane.url);

    const identityBefore = await host.ok('cat /var/lib/gantry-agent/identity.json');
    const rerun = await host.run(installCommand, { timeoutMs: 120_000 });
    expect(rerun.stderr + rerun.stdout).toContain(`installed ${UPGRADE_VERSION} and started it`);
    expect(await host.ok('cat /var/lib/gantry-agent/identity.json')).toBe(identityBefore);
    expect((await host.ok('ls /opt/gantry-agent/releases')).trim()).toMatch(
      new RegExp(`^${UPGRADE_VERSION}-[0-9a-f]{12}$`),
    );
    expect(await host.ok('cat /etc/gantry-agent/agent.env')).not.toContain('GANTRY_AGENT_TOKEN');
    await waitFor(
      async () => (await machine())?.agentVersion === UPGRADE_VERSION && (await machine())?.status === 'Online',
      {
        timeoutMs: 30_000,
        intervalMs: 250,
        description: 'the machine to come back with the new version',
      },
    );
    const machines = (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as unknown[];
    expect(machines).toHaveLength(1);
    expect(await deployAndRead('1.0.2')).toContain('ran as gantry-agent');
  });

  it('upgrades itself when the control plane asks: systemd restarts it as the new version', async () => {
    const newBuild = tempDir('gantry-agent-remote-upgrade-');
    buildAgent(newBuild, { version: REMOTE_UPGRADE_VERSION });
    plane.child.kill('SIGTERM');
    await new Promise((resolve) => plane.child.once('exit', resolve));
    plane = await startPlane(newBuild);
    client = api(plane.url);
    await waitFor(async () => (await machine())?.status === 'Online', {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'the agent back on the replaced control plane',
    });
    const pidBefore = await mainPid();
    const asked = await client.post('/api/machine/upgrade', { workspaceId, machineIds: [machineId] });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toMatchObject({
      version: REMOTE_UPGRADE_VERSION,
      machines: [{ machineId, agentVersion: UPGRADE_VERSION, outcome: 'Requested' }],
    });
    const upgraded = await waitFor(
      async () => {
        const m = (await client.get('/api/machine/details', { machineId })).body;
        if (m.upgrade?.state === 'Failed') throw new Error(`upgrade failed: ${m.upgrade.message}`);
        return m.agentVersion === REMOTE_UPGRADE_VERSION && m.status === 'Online' ? m : null;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the agent back with the version the control plane ships' },
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}\n${(await host.run('journalctl -u gantry-agent -n 40 --no-pager')).stdout}`);
    });
    expect(upgraded).toMatchObject({
      health: 'Online',
      upgrade: { version: REMOTE_UPGRADE_VERSION, state: 'Succeeded' },
    });
    // systemd (Restart=always) started the swapped-in release: a new process of the same unit.
    expect(await unitState()).toBe('active');
    expect(await mainPid()).not.toBe(pidBefore);
    expect((await host.ok('readlink /opt/gantry-agent/current')).trim()).toMatch(
      new RegExp(`^/opt/gantry-agent/releases/${REMOTE_UPGRADE_VERSION.replaceAll('.', '\\.')}-[0-9a-f]{12}$`),
    );
    expect((await host.ok('stat -c %U /opt/gantry-agent/current/gantry-agent.mjs')).trim()).toBe('gantry-agent');
    expect(await deployAndRead('1.0.3')).toContain('ran as gantry-agent');
  });

  it('uninstalls cleanly: no unit, no user, no files; the machine reads Offline', async () => {
    const removed = await host.run(`curl -fsSL ${plane.url}/api/agent/install.sh | sudo sh -s -- --uninstall`);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('uninstalled');
    expect(await unitState()).not.toBe('active');
    expect((await host.run('systemctl cat gantry-agent')).code).not.toBe(0);
    expect((await host.run('id gantry-agent')).code).not.toBe(0);
    expect(
      (await host.ok('ls -d /opt/gantry-agent /etc/gantry-agent /var/lib/gantry-agent 2>/dev/null || true')).trim(),
    ).toBe('');
    await waitFor(async () => (await machine())?.status === 'Offline', { timeoutMs: 30_000, intervalMs: 250 });
  });

  it('enrolls itself with a fleet enrollment key and --name, then uninstalls again', async () => {
    const key = await client.post('/api/machine/enrollment-key', {
      workspaceId,
      name: 'nspawn fleet',
      environmentIds: [staging],
    });
    expect(key.status).toBe(200);
    const installed = await host.run(`${key.body.installCommand} --name fleet-host-1`, { timeoutMs: 120_000 });
    expect(installed.code, installed.stderr).toBe(0);
    const enrolled = await waitFor(
      async () =>
        (
          (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
            name: string;
            status: string;
          }>
        ).find((m) => m.name === 'fleet-host-1' && m.status === 'Online'),
      { timeoutMs: 30_000, intervalMs: 250, description: 'the enrolled machine online' },
    );
    expect(enrolled.name).toBe('fleet-host-1');
    expect((await host.run(`curl -fsSL ${plane.url}/api/agent/install.sh | sh -s -- --uninstall`)).code).toBe(0);
    expect((await host.run('id gantry-agent')).code).not.toBe(0);
  });
});
