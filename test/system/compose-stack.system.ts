/**
 * The multi-node layout started for real: docker-compose.yml exactly as a user runs it
 * (PostgreSQL, NATS JetStream, two control planes, three agents enrolling with the enrollment
 * key), on images scripts/compose-images.sh makes without any registry (Debian packages, tagged
 * with the names the file uses). A deployment goes through it; the replica driving it is stopped
 * (`docker-compose stop`) in the middle, and the deployment must complete through the other one,
 * every step on every agent once. A control plane's and an agent's processes are then killed: Docker
 * restarts both (restart: unless-stopped) and a deployment goes through them. Then `down -v`. Needs root (Docker); images are cached between
 * runs (the gantry image is remade when the checkout changed).
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, bashProject, logsOf, releaseAndDeploy, targetStatuses, workspaceOf, type Api } from '../e2e/harness.ts';
import { waitFor } from '../helpers/wait-for.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const PROJECT = `gantrysys${randomBytes(3).toString('hex')}`;
const ADMIN = { id: 'compose-admin', key: `compose-admin-key-${randomBytes(12).toString('hex')}` };
const env: Record<string, string> = {
  ...(process.env as Record<string, string>),
  GANTRY_BOOTSTRAP_ACCOUNT_ID: ADMIN.id,
  GANTRY_BOOTSTRAP_API_KEY: ADMIN.key,
  GANTRY_MASTER_KEY: randomBytes(32).toString('base64'),
  GANTRY_ENROLLMENT_KEY: randomBytes(24).toString('hex'),
  GANTRY_AGENT_CA_FINGERPRINT: '',
};
const REPLICAS = { 'control-plane-1': 'http://127.0.0.1:8080', 'control-plane-2': 'http://127.0.0.1:8090' } as const;
type Replica = keyof typeof REPLICAS;
const STEPS = ['First', 'Second', 'Third'];
const AGENTS = ['agent-1', 'agent-2', 'agent-3'];

/** docker-compose on the repository's own file, this run's project name. */
function compose(args: string[], timeoutMs = 300_000): Promise<string> {
  process.stderr.write(`compose ${args.join(' ')}\n`);
  return new Promise((resolve, reject) => {
    execFile(
      'docker-compose',
      ['-f', path.join(repoRoot, 'docker-compose.yml'), '-p', PROJECT, ...args],
      { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`docker-compose ${args.join(' ')}: ${error.message}\n${stderr}`)) : resolve(stdout),
    );
  });
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

/** The engine replica ID a control-plane container logged at start ("engine started"). */
async function replicaIdOf(service: Replica): Promise<string> {
  const logs = await compose(['logs', '--no-color', service]);
  const id = /"replicaId":"([^"]+)"[^\n]*"msg":"engine started"/.exec(logs)?.[1];
  if (!id) throw new Error(`no 'engine started' line in the logs of ${service}:\n${logs.slice(-3000)}`);
  return id;
}

let stackUp = false;

beforeAll(async () => {
  execFileSync('bash', [path.join(repoRoot, 'scripts/compose-images.sh')], {
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 20 * 60_000,
  });
  for (const port of [8080, 8081, 8090, 8091])
    if (!(await portFree(port)))
      throw new Error(`port ${port} is taken: docker-compose.yml publishes 8080/8081 and 8090/8091`);
  stackUp = true;
  // As the file's header tells a user: the replicas first, then their CA's fingerprint, then the agents.
  await compose(['up', '-d', 'postgres', 'nats', 'control-plane-1', 'control-plane-2']);
  for (const url of Object.values(REPLICAS))
    // Each try bounded: while a replica starts, Docker's port proxy may take the connection and hold it.
    await waitFor(
      async () => (await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(3000) }).catch(() => null))?.ok === true,
      {
        timeoutMs: 120_000,
        intervalMs: 500,
        description: `${url}/readyz`,
      },
    );
  env.GANTRY_AGENT_CA_FINGERPRINT = await waitFor(
    async () => /"caFingerprint":"([^"]+)"/.exec(await compose(['logs', '--no-color', 'control-plane-1']))?.[1],
    { timeoutMs: 30_000, intervalMs: 500, description: 'the caFingerprint log line' },
  );
  await compose(['up', '-d']);
}, 900_000);

afterAll(async () => {
  if (!stackUp) return;
  await compose(['down', '-v', '--remove-orphans'], 120_000);
  const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=com.docker.compose.project=${PROJECT}`], {
    encoding: 'utf8',
  }).trim();
  expect(left).toBe('');
}, 180_000);

describe('docker-compose.yml started for real', () => {
  let client: Api;
  let workspaceId: string;

  it('brings up two control planes and three agents that enroll themselves with the key', async () => {
    client = api(REPLICAS['control-plane-1'], ADMIN);
    ({ workspaceId } = await workspaceOf(client));
    const machines = await waitFor(
      async () => {
        const list = (await client.get('/api/machine', { workspaceId, take: '100' })).body.machines as Array<{
          name: string;
          status: string;
          agentVersion: string;
        }>;
        const online = list.filter((m) => AGENTS.includes(m.name) && m.status === 'Online');
        return online.length === AGENTS.length ? online : null;
      },
      { timeoutMs: 120_000, intervalMs: 1000, description: 'three agents online' },
    );
    expect(machines.map((m) => m.name).sort()).toEqual(AGENTS);
  });

  it('completes a deployment whose driving control-plane container is stopped in the middle', async () => {
    const { defaultLifecycleId } = await workspaceOf(client);
    const { projectId } = await bashProject(
      client,
      workspaceId,
      defaultLifecycleId,
      STEPS.map((name) => ({
        name,
        script: `echo "${name} began on $(hostname)"; sleep 4; echo "${name} ended on $(hostname)"`,
      })),
    );
    const [deploymentId] = await releaseAndDeploy(client, projectId, ['Staging']);
    await waitFor(async () => (await logsOf(client, deploymentId!)).some((l) => l.Data.startsWith('First began on')), {
      timeoutMs: 60_000,
      intervalMs: 250,
      description: 'the first step to begin',
    });

    // The replica whose engine drives the deployment: it holds the lease only while it advances it
    // (a few ms when a step ends), so PostgreSQL itself watches for it, every 2 ms, up to 30 s;
    // plpgsql reads with a fresh snapshot per statement.
    const postgres = (await compose(['ps', '-q', 'postgres'])).trim();
    const watch = spawnSync(
      'docker',
      [
        ...['exec', postgres, 'psql', '-U', 'gantry', '-d', 'gantry', '-v', 'ON_ERROR_STOP=1', '-qc'],
        `SET statement_timeout = '30s';
         DO $$DECLARE o text; BEGIN LOOP
           SELECT lease_owner INTO o FROM deployments WHERE id = '${deploymentId}';
           EXIT WHEN o IS NOT NULL; PERFORM pg_sleep(0.002);
         END LOOP; RAISE NOTICE 'lease_owner=%', o; END$$;`,
      ],
      { encoding: 'utf8' },
    );
    const owner = /lease_owner=(\S+)/.exec(watch.stderr)?.[1];
    expect(owner, `no replica took the deployment's lease: ${watch.stderr}`).toBeDefined();
    const ids = {
      'control-plane-1': await replicaIdOf('control-plane-1'),
      'control-plane-2': await replicaIdOf('control-plane-2'),
    };
    const driving = (Object.keys(ids) as Replica[]).find((name) => ids[name] === owner);
    expect(driving, `lease owner ${owner} is neither replica (${JSON.stringify(ids)})`).toBeDefined();
    const other: Replica = driving === 'control-plane-1' ? 'control-plane-2' : 'control-plane-1';
    await compose(['stop', driving!]);

    const survivor = api(REPLICAS[other], ADMIN);
    const status = await waitFor(
      async () => {
        const response = await survivor.get('/api/deployment', { deploymentId: deploymentId!, skipLogs: 'True' });
        const s = response.body?.status;
        return ['Completed', 'Failed', 'Cancelled'].includes(s?.Status) ? s : null;
      },
      { timeoutMs: 180_000, intervalMs: 1000, description: 'the deployment to finish on the other replica' },
    );
    expect(status.Status).toBe('Completed');
    const targets = await targetStatuses(survivor, deploymentId!);
    for (const step of STEPS)
      expect(targets[step], step).toEqual(Object.fromEntries(AGENTS.map((agent) => [agent, 'Succeeded'])));
    // Every step ran once on each of the three agents: one "ended" line each, none doubled.
    const logs = await logsOf(survivor, deploymentId!);
    for (const step of STEPS)
      expect(
        logs.filter((l) => l.Data.startsWith(`${step} ended on `)),
        step,
      ).toHaveLength(3);
  });

  it('restarts a control plane and an agent whose processes die (restart: unless-stopped), and deploys through them', async () => {
    // The replica stopped by hand above stays stopped (that is what unless-stopped keeps): start it.
    await compose(['start', 'control-plane-1', 'control-plane-2']);
    const crashed = ['control-plane-2', 'agent-1'];
    const containers = await Promise.all(crashed.map(async (name) => (await compose(['ps', '-q', name])).trim()));
    const inspect = (id: string) =>
      execFileSync('docker', ['inspect', '-f', '{{.RestartCount}} {{.State.Running}}', id], {
        encoding: 'utf8',
      }).trim();
    const before = containers.map((id) => Number(inspect(id).split(' ')[0]));
    // Every process of the container but its init (pid 1, which a signal from inside cannot kill):
    // the init then exits with the killed child's status, 137, as after an out-of-memory kill.
    for (const id of containers) spawnSync('docker', ['exec', id, 'sh', '-c', 'kill -9 -1'], { encoding: 'utf8' });
    for (const [i, id] of containers.entries())
      await waitFor(
        () => {
          const [count, running] = inspect(id).split(' ');
          return Number(count) > before[i]! && running === 'true';
        },
        { timeoutMs: 60_000, intervalMs: 250, description: `${crashed[i]} restarted by Docker` },
      );
    const restarted = REPLICAS['control-plane-2'];
    await waitFor(
      async () =>
        (await fetch(`${restarted}/readyz`, { signal: AbortSignal.timeout(3000) }).catch(() => null))?.ok === true,
      { timeoutMs: 120_000, intervalMs: 500, description: 'the restarted replica ready' },
    );
    const through = api(restarted, ADMIN);
    const { defaultLifecycleId } = await workspaceOf(through);
    const { projectId } = await bashProject(through, workspaceId, defaultLifecycleId, [
      { name: 'After', script: 'echo "after the crash on $(hostname)"' },
    ]);
    const [deploymentId] = await releaseAndDeploy(through, projectId, ['Staging']);
    const status = await waitFor(
      async () => {
        const s = (await through.get('/api/deployment', { deploymentId: deploymentId!, skipLogs: 'True' })).body
          ?.status;
        return ['Completed', 'Failed', 'Cancelled'].includes(s?.Status) ? s : null;
      },
      { timeoutMs: 120_000, intervalMs: 1000, description: 'the deployment after the crash' },
    );
    expect(status.Status).toBe('Completed');
    expect((await targetStatuses(through, deploymentId!)).After).toEqual(
      Object.fromEntries(AGENTS.map((agent) => [agent, 'Succeeded'])),
    );
  });
});
