/**
 * bench/chaos: faults under a stream of deployments, on a PostgreSQL and a nats-server this bench
 * starts and owns (the machine's shared ones are never touched). Two control-plane replicas, four
 * agents that know both; a client keeps deployments of a step that prints numbered lines flowing
 * (release create and deploy with Idempotency-Key, retried on errors), while the bench
 *   1. SIGKILLs a replica ×20 (and restarts it on the same ports),
 *   2. SIGKILLs an agent ×5 mid-step (and restarts it from the same home),
 *   3. restarts PostgreSQL ×3 and 4. restarts NATS ×3, each down for 2 s.
 * Then every deployment must end; each completed one must hold every line of every machine once,
 * in order. Prints per phase: faults, takeover / recovery time, deployments completed / failed /
 * stuck, lines lost / doubled / out of order. Exits non-zero when a run itself fails (stuck
 * deployments, lost or doubled lines, or a failure no fault explains).
 *
 *   npx tsx bench/chaos/chaos.ts [--kills 20] [--agent-kills 5] [--restarts 3]
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger, freePort, isFinalStatus } from '../../services/core/index.ts';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../services/store/index.ts';
import { startOwnNatsServer } from '../../test/helpers/nats-server.ts';
import {
  bashProject,
  cleanup,
  startAgent,
  startControlPlane,
  workspaceOf,
  type Agent,
  type Api,
  type ControlPlane,
  basicAuthorization,
} from '../../test/e2e/harness.ts';

const flag = (name: string, fallback: number) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const REPLICA_KILLS = flag('kills', 20);
const AGENT_KILLS = flag('agent-kills', 5);
const RESTARTS = flag('restarts', 3);
const AGENTS = 4;
const LINES = 20;
const IN_FLIGHT = 3;

const logger = createLogger('silent');
const began = Date.now();
/** Progress on stderr, so the table on stdout stays clean. */
const progress = (text: string) => process.stderr.write(`[${((Date.now() - began) / 1000).toFixed(1)} s] ${text}\n`);
const root = mkdtempSync(path.join(tmpdir(), 'gantry-chaos-'));
chmodSync(root, 0o755);

// ---- the infrastructure this bench owns ------------------------------------------------------
const pgPort = await freePort();
const pgDir = path.join(root, 'pg');
let database: EmbeddedDatabase | null = await startEmbeddedPostgres({ dataDir: pgDir, port: pgPort, logger });
const databaseUrl = database.url;
const nats = await startOwnNatsServer();
const taken: number[] = [];
const distinctPort = async () => {
  const port = await freePort(taken);
  taken.push(port);
  return port;
};
const replicaPorts = [
  { http: await distinctPort(), grpc: await distinctPort() },
  { http: await distinctPort(), grpc: await distinctPort() },
];
const prefix = `chaos${randomBytes(3).toString('hex')}`;
const startReplica = (i: number) =>
  startControlPlane({
    databaseUrl,
    natsUrl: nats.url,
    natsPrefix: prefix,
    dataDir: path.join(root, `replica-${i}`),
    ports: replicaPorts[i]!,
    env: { GANTRY_AGENT_LOST_TIMEOUT_SECONDS: '30' },
  });
const replicas: Array<ControlPlane | null> = [await startReplica(0), await startReplica(1)];
const grpcAddresses = replicaPorts.map((p) => `127.0.0.1:${p.grpc}`);

// ---- a client that survives replicas and databases going away -------------------------------
const authorization = basicAuthorization();
async function call(
  method: string,
  route: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; text: string }> {
  for (let attempt = 0; ; attempt++) {
    for (const ports of [...replicaPorts].sort(() => Math.random() - 0.5)) {
      try {
        const response = await fetch(`http://127.0.0.1:${ports.http}${route}`, {
          method,
          headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        // 5xx: that replica or its database is down; 409: a first attempt with this Idempotency-Key
        // is still held (it is taken over once abandoned). Both are worth another try.
        if (response.status >= 500 || (response.status === 409 && text.includes('Idempotency-Key'))) continue;
        const parsed: any = text ? JSON.parse(text.replace(/:(\d{16,})([,}\]])/g, ':"$1"$2')) : null;
        return { status: response.status, body: parsed, text };
      } catch {
        // that replica is down: try the other
      }
    }
    if (attempt > 600) throw new Error(`${method} ${route}: no replica answered for a minute`);
    await sleep(100);
  }
}

/** The e2e harness's client shape, over `call`. */
const client: Api = {
  get: (route, query) => call('GET', `${route}${query ? `?${new URLSearchParams(query).toString()}` : ''}`),
  post: (route, body) => call('POST', route, body ?? {}),
  put: (route, body) => call('PUT', route, body ?? {}),
  delete: (route, body) => call('DELETE', route, body ?? {}),
};
const { workspaceId, environments, defaultLifecycleId } = await workspaceOf(client);
await call('PUT', '/api/organization/settings', { maxParallelMachines: AGENTS, maxConcurrentDeployments: 20 });

// ---- agents ----------------------------------------------------------------------------------
const agents: Agent[] = [];
/** Each agent's own home (identity, journal): a restarted agent runs on it again. */
const homes: string[] = [];
const machineIds: string[] = [];
for (let i = 0; i < AGENTS; i++) {
  const created = await call('POST', '/api/machine', {
    workspaceId,
    name: `chaos-agent-${i}`,
    environmentIds: [environments.Staging],
  });
  machineIds.push(created.body.machineId);
  // Half of them list the replicas the other way round, so both hold sessions.
  const servers = i % 2 === 0 ? grpcAddresses : [...grpcAddresses].reverse();
  agents.push(
    startAgent(servers, created.body.registrationToken, {
      GANTRY_AGENT_LOG_LEVEL: process.env.CHAOS_AGENT_LOG_LEVEL ?? 'error',
    }),
  );
  homes.push(agents.at(-1)!.home);
}
async function onlineCount(): Promise<number> {
  const list = await call('GET', `/api/machine?workspaceId=${workspaceId}&take=100`);
  return (list.body.machines as Array<{ machineId: string; status: string }>).filter(
    (m) => machineIds.includes(m.machineId) && m.status === 'Online',
  ).length;
}
async function untilAllOnline(timeoutMs = 120_000): Promise<number> {
  const started = Date.now();
  while ((await onlineCount()) < AGENTS) {
    if (Date.now() - started > timeoutMs) throw new Error('agents did not come back online');
    await sleep(50);
  }
  return Date.now() - started;
}
await untilAllOnline();

const script = `for i in $(seq 1 ${LINES}); do echo "line-$i"; sleep 0.02; done`;
const { projectId } = await bashProject(client, workspaceId, defaultLifecycleId, [
  { name: 'Lines', script, settings: { parallelMachines: AGENTS } },
]);

// ---- the stream of deployments ---------------------------------------------------------------
interface Tracked {
  id: string;
  phase: string;
  createdAt: number;
  completedAt?: number;
}
const tracked: Tracked[] = [];
let phase = 'warm-up';
let streaming = true;
let version = 0;

async function deployOne(): Promise<void> {
  const key = randomBytes(8).toString('hex');
  const v = `1.0.${++version}`;
  const release = await call('POST', '/api/release', { projectId, version: v }, { 'idempotency-key': `r-${key}` });
  if (release.status !== 200)
    throw new Error(`release create answered ${release.status}: ${JSON.stringify(release.body)}`);
  const deployed = await call(
    'POST',
    '/api/release/deploy',
    { releaseId: release.body.releaseId, environments: ['Staging'] },
    { 'idempotency-key': `d-${key}` },
  );
  if (deployed.status !== 200) throw new Error(`deploy answered ${deployed.status}: ${JSON.stringify(deployed.body)}`);
  const item: Tracked = { id: deployed.body.deploymentIds[0] as string, phase, createdAt: Date.now() };
  tracked.push(item);
  for (;;) {
    const read = await call('GET', `/api/deployment?deploymentId=${item.id}&skipLogs=true`);
    if (isFinalStatus(read.body?.status?.Status ?? '')) break;
    await sleep(50);
  }
  item.completedAt = Date.now();
}

const workers = Array.from({ length: IN_FLIGHT }, async () => {
  while (streaming) await deployOne();
});

/**
 * Recovery from a fault at `at`: until a deployment created after it has finished (every machine
 * ran its step: agents reconnected, the engine and the bus work again). NaN after the timeout.
 */
async function recoveryAfter(at: number, timeoutMs = 120_000): Promise<number> {
  const started = Date.now();
  for (;;) {
    const done = tracked.filter((t) => t.createdAt > at && t.completedAt !== undefined).map((t) => t.completedAt!);
    if (done.length > 0) return Math.min(...done) - at;
    if (Date.now() - started > timeoutMs) return NaN;
    await sleep(50);
  }
}

// ---- faults ----------------------------------------------------------------------------------
const rows: Array<{ phase: string; faults: number; recovery: number[] }> = [];
await sleep(3_000);

phase = 'replica SIGKILL';
const takeovers: number[] = [];
for (let kill = 0; kill < REPLICA_KILLS; kill++) {
  const victim = kill % 2;
  replicas[victim]!.child.kill('SIGKILL');
  const killedAt = Date.now();
  // Its agents fail over to the other replica, which carries every deployment on.
  takeovers.push(await recoveryAfter(killedAt));
  progress(`replica ${victim} SIGKILL ${kill + 1}/${REPLICA_KILLS}: recovered in ${takeovers.at(-1)} ms`);
  replicas[victim] = await startReplica(victim);
  await sleep(1_000);
}
rows.push({ phase, faults: REPLICA_KILLS, recovery: takeovers });

phase = 'agent SIGKILL';
const agentRecoveries: number[] = [];
for (let kill = 0; kill < AGENT_KILLS; kill++) {
  const i = kill % AGENTS;
  agents[i]!.child.kill('SIGKILL');
  const killedAt = Date.now();
  await sleep(1_000);
  agents[i] = startAgent([grpcAddresses[0]!, grpcAddresses[1]!], '', {
    GANTRY_AGENT_HOME: homes[i]!,
    GANTRY_AGENT_LOG_LEVEL: process.env.CHAOS_AGENT_LOG_LEVEL ?? 'error',
  });
  agentRecoveries.push(await recoveryAfter(killedAt));
  progress(`agent ${i} SIGKILL ${kill + 1}/${AGENT_KILLS}: recovered in ${agentRecoveries.at(-1)} ms`);
  await sleep(1_000);
}
rows.push({ phase, faults: AGENT_KILLS, recovery: agentRecoveries });

phase = 'PostgreSQL restart';
const pgRecoveries: number[] = [];
for (let restart = 0; restart < RESTARTS; restart++) {
  await database.stop();
  database = null;
  await sleep(2_000);
  database = await startEmbeddedPostgres({ dataDir: pgDir, port: pgPort, logger });
  pgRecoveries.push(await recoveryAfter(Date.now()));
  progress(`PostgreSQL restart ${restart + 1}/${RESTARTS}: recovered in ${pgRecoveries.at(-1)} ms`);
  await sleep(1_000);
}
rows.push({ phase, faults: RESTARTS, recovery: pgRecoveries });

phase = 'NATS restart';
const natsRecoveries: number[] = [];
for (let restart = 0; restart < RESTARTS; restart++) {
  await nats.stop();
  await sleep(2_000);
  await nats.start();
  natsRecoveries.push(await recoveryAfter(Date.now()));
  progress(`NATS restart ${restart + 1}/${RESTARTS}: recovered in ${natsRecoveries.at(-1)} ms`);
  await sleep(1_000);
}
rows.push({ phase, faults: RESTARTS, recovery: natsRecoveries });

streaming = false;
await Promise.race([Promise.all(workers), sleep(180_000)]);

// ---- verification ----------------------------------------------------------------------------
interface Verdict {
  status: string;
  reason: string;
  lost: number;
  doubled: number;
  disordered: number;
  agentRestarted: boolean;
}
async function verdictOf(id: string): Promise<Verdict> {
  const read = await call('GET', `/api/deployment?deploymentId=${id}`);
  const status = read.body.status.Status as string;
  const logs = read.body.logs as Array<{ Data: string; ParentLogId: string | null }>;
  const errors = logs.filter((l) => (l as { LogLevel?: string }).LogLevel === 'Error').map((l) => l.Data);
  const verdict: Verdict = {
    status,
    reason: errors.join(' | '),
    lost: 0,
    doubled: 0,
    disordered: 0,
    agentRestarted: false,
  };
  verdict.agentRestarted = logs.some((l) => l.Data.includes('agent restarted during the step'));
  if (status !== 'Completed') return verdict;
  const byTask = new Map<string, number[]>();
  for (const line of logs) {
    const match = /^line-(\d+)$/.exec(line.Data);
    if (!match || !line.ParentLogId) continue;
    byTask.set(line.ParentLogId, [...(byTask.get(line.ParentLogId) ?? []), Number(match[1])]);
  }
  if (byTask.size !== AGENTS) verdict.lost += (AGENTS - byTask.size) * LINES;
  for (const numbers of byTask.values()) {
    const seen = new Set(numbers);
    verdict.lost += LINES - seen.size;
    verdict.doubled += numbers.length - seen.size;
    verdict.disordered += numbers.some((n, i) => i > 0 && n < numbers[i - 1]!) ? 1 : 0;
  }
  return verdict;
}

let failedRun = false;
console.log(
  `\n| phase | faults | takeover / recovery median (max) | deployments | completed | failed (agent killed) | failed (other) | stuck | lines lost | doubled | out of order |`,
);
console.log(`|---|---|---|---|---|---|---|---|---|---|---|`);
for (const name of ['warm-up', ...rows.map((r) => r.phase)]) {
  const row = rows.find((r) => r.phase === name);
  const verdicts = await Promise.all(tracked.filter((t) => t.phase === name).map((t) => verdictOf(t.id)));
  const count = (f: (v: Verdict) => boolean) => verdicts.filter(f).length;
  const sum = (f: (v: Verdict) => number) => verdicts.reduce((total, v) => total + f(v), 0);
  const stuck = count((v) => !isFinalStatus(v.status));
  for (const v of verdicts.filter((x) => x.status !== 'Completed' && !x.agentRestarted))
    console.log(`  ${v.status}: ${v.reason}`);
  const otherFailures = count((v) => v.status !== 'Completed' && isFinalStatus(v.status) && !v.agentRestarted);
  const lost = sum((v) => v.lost);
  const doubled = sum((v) => v.doubled);
  const disordered = sum((v) => v.disordered);
  if (stuck > 0 || otherFailures > 0 || lost > 0 || doubled > 0 || disordered > 0) failedRun = true;
  const recovery = row
    ? (() => {
        const sorted = [...row.recovery].sort((a, b) => a - b);
        return `${(sorted[Math.floor(sorted.length / 2)]! / 1000).toFixed(1)} s (${(sorted.at(-1)! / 1000).toFixed(1)} s)`;
      })()
    : '—';
  console.log(
    `| ${name} | ${row?.faults ?? 0} | ${recovery} | ${verdicts.length} | ${count((v) => v.status === 'Completed')} | ` +
      `${count((v) => v.status === 'Failed' && v.agentRestarted)} | ${otherFailures} | ${stuck} | ${lost} | ${doubled} | ${disordered} |`,
  );
}
const usual = tracked.filter((t) => t.phase === 'warm-up' && t.completedAt).map((t) => t.completedAt! - t.createdAt);
console.log(
  `\nTakeover / recovery: from the SIGKILL (or the moment PostgreSQL / NATS is back) until a deployment created after it has finished on all ${AGENTS} machines. ` +
    `An undisturbed deployment takes ${(usual.sort((a, b) => a - b)[Math.floor(usual.length / 2)]! / 1000).toFixed(1)} s (median of the warm-up, ${IN_FLIGHT} in flight). ` +
    'Deployments are counted in the phase they were created in.',
);

const keepLogs = process.env.CHAOS_KEEP_LOGS;
if (keepLogs) {
  const { mkdirSync, writeFileSync } = await import('node:fs');
  mkdirSync(keepLogs, { recursive: true });
  agents.forEach((agent, i) => writeFileSync(path.join(keepLogs, `agent-${i}.log`), agent.output()));
  replicas.forEach((replica, i) => replica && writeFileSync(path.join(keepLogs, `replica-${i}.log`), replica.output()));
}
await cleanup();
await nats.dispose();
await database?.stop();
rmSync(root, { recursive: true, force: true });
process.exit(failedRun ? 1 : 0);
