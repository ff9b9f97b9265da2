/**
 * Distribution end to end: two control-plane processes on one PostgreSQL and one NATS JetStream,
 * three real agents spread over them, and one replica SIGKILLed while it drives a deployment.
 * The other replica must carry the deployment on within 30 s, no step may run twice on a machine,
 * and no log line may be stored twice when agents re-send what the dead replica never acknowledged.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/database.ts';
import { waitFor } from '../helpers/wait-for.ts';
import {
  api,
  cleanup,
  replicaIdOf,
  startAgent,
  startControlPlane,
  tempDir,
  waitForDeployment,
  type Agent,
  type Api,
  type ControlPlane,
} from './harness.ts';

const STEPS = ['First', 'Second', 'Third', 'Fourth'];
const SCRIPT_SECONDS = 2;
const MACHINES = ['agent-1', 'agent-2', 'agent-3'];

interface Replica {
  plane: ControlPlane;
  client: Api;
  replicaId: string;
}

interface Cluster {
  databaseUrl: string;
  replicas: [Replica, Replica];
  /** Agent by machine name, with the replica it lists first. */
  agents: Record<string, { agent: Agent; first: Replica }>;
  workspaceId: string;
  lifecycleId: string;
  markers: string;
}

/** One fresh (empty) database, one NATS prefix, two replicas started together, three agents. */
async function startCluster(): Promise<Cluster> {
  const databaseUrl = (await createTestDatabase({ empty: true })).url;
  const natsPrefix = `e2e_failover_${randomBytes(4).toString('hex')}`;
  const start = () =>
    startControlPlane({ databaseUrl, natsUrl: 'nats://127.0.0.1:4222', natsPrefix, env: { GANTRY_LOG_LEVEL: 'info' } });
  // Together: migrations and the bootstrap seed must run once, under their locks, not race.
  const planes = await Promise.all([start(), start()]);
  const replicas = planes.map((plane) => ({ plane, client: api(plane.url), replicaId: replicaIdOf(plane) })) as [
    Replica,
    Replica,
  ];
  const [a, b] = replicas;
  expect(a.replicaId).not.toBe(b.replicaId);

  const workspaces = (await a.client.get('/api/workspace')).body.workspaces as Array<{ workspaceId: string }>;
  expect(workspaces).toHaveLength(1);
  const workspaceId = workspaces[0]!.workspaceId;
  // Seeded once although both replicas bootstrapped the same empty database at the same time.
  const environments = (await b.client.get('/api/environment', { workspaceId })).body.environments as Array<{
    environmentId: string;
    name: string;
  }>;
  expect(environments.map((e) => e.name).sort()).toEqual(['Production', 'Staging']);
  const lifecycles = (await b.client.get('/api/lifecycle', { workspaceId })).body.lifecycles as Array<{
    lifecycleId: string;
    name: string;
  }>;
  expect(lifecycles.map((l) => l.name)).toEqual(['Default Lifecycle']);

  const agents: Cluster['agents'] = {};
  for (const [index, name] of MACHINES.entries()) {
    // Machines are created on either replica; agents list A first or B first, so both hold sessions.
    const creator = replicas[index % 2]!;
    const created = await creator.client.post('/api/machine', {
      workspaceId,
      name,
      environmentIds: environments.map((e) => e.environmentId),
    });
    expect(created.status, created.text).toBe(200);
    const first = index === 1 ? b : a;
    const second = first === a ? b : a;
    agents[name] = {
      agent: startAgent([first.plane.grpcAddress, second.plane.grpcAddress], created.body.registrationToken),
      first,
    };
  }
  await waitFor(
    async () => {
      const list = await b.client.get('/api/machine', { workspaceId });
      return list.body.machines.filter((m: { status: string }) => m.status === 'Online').length === MACHINES.length;
    },
    { timeoutMs: 60_000, intervalMs: 250, description: 'three agents online' },
  );
  return {
    databaseUrl,
    replicas,
    agents,
    workspaceId,
    lifecycleId: lifecycles[0]!.lifecycleId,
    markers: tempDir('gantry-e2e-markers-'),
  };
}

/** Each step appends its name to a per-machine marker file, prints two lines, and takes a while. */
async function markerProject(cluster: Cluster, client: Api): Promise<string> {
  const projectId = (
    await client.post('/api/project', {
      workspaceId: cluster.workspaceId,
      name: `Failover ${randomBytes(3).toString('hex')}`,
      lifecycleId: cluster.lifecycleId,
    })
  ).body.projectId as string;
  for (const name of STEPS) {
    const script = [
      `echo "#{CONTEXT.StepName}" >> '${cluster.markers}/#{CONTEXT.MachineName}.runs'`,
      'echo "begin #{CONTEXT.StepName} on #{CONTEXT.MachineName}"',
      `sleep ${SCRIPT_SECONDS}`,
      'echo "end #{CONTEXT.StepName} on #{CONTEXT.MachineName}"',
    ].join('\n');
    const template = await client.post('/api/step-template', {
      workspaceId: cluster.workspaceId,
      name: `failover-${name}-${randomBytes(3).toString('hex')}`,
      script,
      scriptLanguage: 'bash',
    });
    expect(template.status, template.text).toBe(200);
    const step = await client.post('/api/project/step', {
      projectId,
      name,
      stepTemplateId: template.body.stepTemplateId,
    });
    expect(step.status, step.text).toBe(200);
  }
  return projectId;
}

async function createRelease(client: Api, projectId: string): Promise<string> {
  const created = await client.post('/api/release', { projectid: projectId, version: '1.0.0' });
  expect(created.status, created.text).toBe(200);
  return created.body.releaseId as string;
}

/** Watches deployments.lease_owner from outside every replica: who drove the deployment, and when. */
async function watchLease(databaseUrl: string, deploymentId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const seen: Array<{ at: number; owner: string; until: number; status: string }> = [];
  let latest: { owner: string | null; status: string } = { owner: null, status: '' };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const { rows } = await client.query<{ lease_owner: string | null; lease_until: Date | null; status: string }>(
        'select lease_owner, lease_until, status from deployments where id = $1',
        [deploymentId],
      );
      const row = rows[0];
      if (row) {
        latest = { owner: row.lease_owner, status: row.status };
        if (row.lease_owner)
          seen.push({
            at: Date.now(),
            owner: row.lease_owner,
            until: row.lease_until?.getTime() ?? 0,
            status: row.status,
          });
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  return {
    seen,
    latest: () => latest,
    async stop() {
      stopped = true;
      await loop;
      await client.end();
    },
  };
}

function logsOf(client: Api, deploymentId: string): Promise<Array<{ Data: string }>> {
  return client.get('/api/deployment', { deploymentId, skipLogs: 'False' }).then((r) => r.body.logs);
}

/** Every step ran exactly once on every machine (marker files) and printed each line exactly once (logs). */
async function expectEveryStepExactlyOnce(cluster: Cluster, client: Api, deploymentId: string): Promise<void> {
  for (const machine of MACHINES) {
    const runs = readFileSync(path.join(cluster.markers, `${machine}.runs`), 'utf8')
      .trim()
      .split('\n');
    expect(runs, `steps run on ${machine}`).toEqual(STEPS);
  }
  const data = (await logsOf(client, deploymentId)).map((l) => l.Data);
  for (const machine of MACHINES) {
    for (const step of STEPS) {
      expect(
        data.filter((d) => d === `begin ${step} on ${machine}`),
        `begin ${step} on ${machine}`,
      ).toHaveLength(1);
      expect(
        data.filter((d) => d === `end ${step} on ${machine}`),
        `end ${step} on ${machine}`,
      ).toHaveLength(1);
    }
  }
  const targets = await client.get('/api/deployment/targets', { deploymentId });
  expect(targets.status, targets.text).toBe(200);
  const statuses = (
    targets.body.steps as Array<{ name: string; targets: Array<{ machineName: string; status: string }> }>
  ).map((s) => [s.name, s.targets.map((t) => `${t.machineName}:${t.status}`)]);
  expect(statuses).toEqual(STEPS.map((s) => [s, MACHINES.map((m) => `${m}:Succeeded`)]));
}

/** What the database, the survivor and the agents say, for a failure message. */
async function diagnose(cluster: Cluster, survivor: Replica, deploymentId: string): Promise<string> {
  const client = new pg.Client({ connectionString: cluster.databaseUrl });
  await client.connect();
  try {
    const deployment = (
      await client.query('select status, lease_owner, lease_until, scheduled_for from deployments where id = $1', [
        deploymentId,
      ])
    ).rows;
    const tasks = (
      await client.query(
        'select step_name, machine_name, status, message from deployment_tasks where deployment_id = $1 order by stage_index, machine_name',
        [deploymentId],
      )
    ).rows;
    const agents = Object.entries(cluster.agents).map(
      ([name, { agent }]) => `--- ${name}\n${agent.output().slice(-3000)}`,
    );
    const markers = MACHINES.map(
      (m) =>
        `${m}: ${readFileSync(path.join(cluster.markers, `${m}.runs`), { encoding: 'utf8', flag: 'a+' })
          .trim()
          .split('\n')
          .join(',')}`,
    );
    const survivorLog = survivor.plane
      .output()
      .split('\n')
      .filter((line) => !/"msg":"(incoming request|request completed)"/.test(line))
      .join('\n');
    return [
      JSON.stringify(deployment),
      JSON.stringify(tasks),
      ...markers,
      `--- survivor\n${survivorLog.slice(-8000)}`,
      ...agents,
    ].join('\n');
  } finally {
    await client.end();
  }
}

async function finished(cluster: Cluster, survivor: Replica, deploymentId: string, timeoutMs: number) {
  try {
    return await waitForDeployment(survivor.client, deploymentId, timeoutMs);
  } catch (error) {
    throw new Error(`${String(error)}\n${await diagnose(cluster, survivor, deploymentId)}`);
  }
}

function sigkill(replica: Replica): Promise<void> {
  const child = replica.plane.child;
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('control-plane failover on PostgreSQL + NATS JetStream with two replicas', () => {
  afterEach(async () => {
    await cleanup();
  });

  it('carries a running deployment on within 30 s when the replica driving it is SIGKILLed, running no step twice', async () => {
    const cluster = await startCluster();
    const [a, b] = cluster.replicas;
    const projectId = await markerProject(cluster, a.client);
    const releaseId = await createRelease(b.client, projectId);
    const deployed = await a.client.post('/api/release/deploy', { releaseId, environments: ['Staging'] });
    expect(deployed.status, deployed.text).toBe(200);
    const [deploymentId] = deployed.body.deploymentIds as string[];
    const lease = await watchLease(cluster.databaseUrl, deploymentId!);
    try {
      // Mid-deployment: the first step's scripts are running on the machines.
      await waitFor(
        async () => (await logsOf(a.client, deploymentId!)).some((l) => l.Data.startsWith('begin First on ')),
        {
          timeoutMs: 30_000,
          intervalMs: 100,
          description: 'the first step to run',
        },
      );
      // Kill whichever replica is driving the deployment right now (holds its lease).
      const owner = await waitFor(() => lease.latest().owner, {
        timeoutMs: 20_000,
        intervalMs: 1,
        description: 'a replica to hold the lease',
      });
      const victim = owner === a.replicaId ? a : b;
      const survivor = victim === a ? b : a;
      expect(owner).toBe(victim.replicaId);
      await sigkill(victim);
      const killedAt = Date.now();
      const statusAtKill = lease.latest().status;
      expect(['Running']).toContain(statusAtKill);
      expect(
        (await survivor.client.get('/api/deployment', { deploymentId: deploymentId!, skipLogs: 'true' })).body.status
          .Status,
      ).toBe('Running');

      const status = await finished(cluster, survivor, deploymentId!, 30_000 + STEPS.length * SCRIPT_SECONDS * 1000);
      const tookMs = Date.now() - killedAt;
      expect(status.Status).toBe('Completed');
      // What is left after the kill is at most every step's script time; the takeover gets 30 s.
      expect(tookMs).toBeLessThan(30_000 + STEPS.length * SCRIPT_SECONDS * 1000);

      await expectEveryStepExactlyOnce(cluster, survivor.client, deploymentId!);
      // After the kill only the survivor drove the deployment; before it, the victim did.
      // (A lease the victim held when it died stays in the row, never renewed, until it expires
      // and the survivor takes it over.)
      const before = new Set(lease.seen.filter((s) => s.at < killedAt).map((s) => s.owner));
      expect(before.has(victim.replicaId)).toBe(true);
      const after = lease.seen.filter((s) => s.at > killedAt + 50);
      const victimUntil = Math.max(
        0,
        ...lease.seen.filter((s) => s.at <= killedAt && s.owner === victim.replicaId).map((s) => s.until),
      );
      expect(after.filter((s) => s.owner === victim.replicaId).every((s) => s.until <= victimUntil)).toBe(true);
      // The takeover itself: the survivor's first lease after the kill, within 30 s.
      const takeover = after.find((s) => s.owner === survivor.replicaId);
      expect(takeover).toBeDefined();
      expect(takeover!.at - killedAt).toBeLessThan(30_000);
      const stale = after.some((s) => s.owner === victim.replicaId);
      console.info(
        `failover: taken over ${takeover!.at - killedAt} ms and completed ${tookMs} ms after the kill; the victim ${stale ? 'died holding the lease (taken over after expiry)' : 'had released the lease'}`,
      );
      // The agents that were on the dead replica came over to the survivor: all are Online there.
      const onVictim = Object.values(cluster.agents).filter((x) => x.first === victim);
      expect(onVictim.length).toBeGreaterThan(0);
      for (const { agent } of onVictim) expect(agent.output()).toContain('control-plane session ended; reconnecting');
      const machines = (await survivor.client.get('/api/machine', { workspaceId: cluster.workspaceId })).body
        .machines as Array<{ status: string }>;
      expect(machines.map((m) => m.status)).toEqual(['Online', 'Online', 'Online']);
    } finally {
      await lease.stop();
    }
  }, 240_000);

  it('runs a deployment that was still Queued when the replica that accepted it was SIGKILLed', async () => {
    const cluster = await startCluster();
    const [a, b] = cluster.replicas;
    const projectId = await markerProject(cluster, a.client);
    const releaseId = await createRelease(a.client, projectId);
    const at = Date.now() + 3_000;
    const deployed = await a.client.post('/api/release/deploy', {
      releaseId,
      environments: ['Staging'],
      deploymentDateUnixMillis: at,
    });
    expect(deployed.status, deployed.text).toBe(200);
    const [deploymentId] = deployed.body.deploymentIds as string[];
    const lease = await watchLease(cluster.databaseUrl, deploymentId!);
    try {
      expect(
        (await a.client.get('/api/deployment', { deploymentId: deploymentId!, skipLogs: 'true' })).body.status.Status,
      ).toBe('Queued');
      await sigkill(a);
      const killedAt = Date.now();
      expect(killedAt).toBeLessThan(at);

      const status = await finished(cluster, b, deploymentId!, 30_000 + STEPS.length * SCRIPT_SECONDS * 1000);
      expect(status.Status).toBe('Completed');
      await expectEveryStepExactlyOnce(cluster, b.client, deploymentId!);
      const started = (await logsOf(b.client, deploymentId!)).filter((l) => l.Data.startsWith('begin First on '));
      expect(started).toHaveLength(MACHINES.length);
      // Only the survivor drove it once A was dead (A may have looked at it while it was Queued).
      const aUntil = Math.max(
        0,
        ...lease.seen.filter((s) => s.at <= killedAt && s.owner === a.replicaId).map((s) => s.until),
      );
      const after = lease.seen.filter((s) => s.at > killedAt + 50);
      expect(after.some((s) => s.owner === b.replicaId)).toBe(true);
      expect(
        after.filter((s) => s.owner === a.replicaId).every((s) => s.until <= aUntil && s.status === 'Queued'),
      ).toBe(true);
    } finally {
      await lease.stop();
    }
  }, 240_000);
});
