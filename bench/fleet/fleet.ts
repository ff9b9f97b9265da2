/**
 * bench/fleet: one control-plane replica with N simulated agents (bench/fleet/sim-agents.ts: the
 * agent's own session code, each on a connection of its own, running nothing) and two real agents.
 * Per N: connect storm, server RSS, idle CPU of the server and of PostgreSQL (its backends for this
 * database), then one deployment of a bash step to all N + 2 machines in a rolling group of window
 * W: first RunTask after the deploy request, slot free → next RunTask, tasks/s, and every machine
 * exactly once. See bench/README.md.
 *
 *   npx tsx bench/fleet/fleet.ts                       (N = 500, 2000, 10000; window 500; idle 30 s)
 *   npx tsx bench/fleet/fleet.ts --n 500 --idle-s 10   (a short run)
 *   npx tsx bench/fleet/fleet.ts --n 2000 --window 100 --sims 2
 *   npx tsx bench/fleet/fleet.ts --n 2000 --profile /tmp/prof   (a CPU profile of the control plane per N;
 *     it prints the idle and deployment windows' bounds for bench/shared/cpu-profile.ts)
 *   npx tsx bench/fleet/fleet.ts --n 500 --warm-ups 1   (one deployment to all first: the measured one runs
 *     warm code, as on a replica that has deployed before; default 0, the replica's first deployment)
 *   npx tsx bench/fleet/fleet.ts --task-ms 500-1500   (each simulated task takes 0.5–1.5 s, uniformly;
 *     `--task-ms 1000`: 1 s each): the tasks then bound the rate, and the refill is the server's own
 *     latency, not the loop's cycle (see "Refill against Little's law" in main)
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { isFinalStatus } from '../../services/core/index.ts';
import { waitFor } from '../../test/helpers/wait-for.ts';
import {
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startMachines,
  stopProcess,
  workspaceOf,
} from '../../test/e2e/harness.ts';
import { machineBusy, processCpu } from '../deploy/cpu.ts';
import { percentile, table } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';
import { reportSims, seedSimulatedMachines, startSims, stopSim, type Sim } from './sim-control.ts';

const GOAL = {
  rssMiB: 1024,
  idleCpuPercent: 10,
  firstRunTaskMs: 250,
  refillP95Ms: 100,
  refillMaxMs: 250,
  tasksPerSecond: 2_000,
  flatRatio: 1.5,
};

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const SIZES = (option('--n') ?? '500,2000,10000').split(',').map(Number);
const WINDOW = Number(option('--window') ?? 500);
const IDLE_S = Number(option('--idle-s') ?? 30);
/** Simulator processes (agents split evenly): one Node event loop per ~5,000 connections. */
const SIMS = Number(option('--sims') ?? 2);
const PROFILE_DIR = option('--profile');
/** The replica's heartbeat cap (GANTRY_AGENT_HEARTBEATS_PER_SECOND); default: the server's own. */
const HEARTBEATS_PER_SECOND = option('--heartbeats-per-second');
/** The simulated agents' gRPC keepalive, ms (default: the agent's own, 30 s). */
const AGENT_KEEPALIVE_MS = option('--agent-keepalive-ms');
/**
 * How long a simulated agent's task takes, ms: `T` or `MIN-MAX` (uniform). Default 0: answered at
 * once, as issue #20 asks.
 */
const [TASK_MIN_MS = 0, TASK_MAX_MS = TASK_MIN_MS] = (option('--task-ms') ?? '0').split('-').map(Number);
if (!(TASK_MIN_MS >= 0 && TASK_MAX_MS >= TASK_MIN_MS)) throw new Error('--task-ms: T or MIN-MAX, in ms');
const TASKS_TAKE_TIME = TASK_MAX_MS > 0;
const TASK_TIME = TASK_MIN_MS === TASK_MAX_MS ? `${TASK_MIN_MS} ms` : `${TASK_MIN_MS}–${TASK_MAX_MS} ms (uniform)`;
const SCRIPT = 'echo fleet';
/**
 * Deployments to all before the measured one (default 0: the measured one is the replica's first,
 * its code paths run cold in V8). With 1, the measured one runs the code as a replica that has
 * deployed before does.
 */
const WARM_UPS = Number(option('--warm-ups') ?? 0);
if (!(Number.isInteger(WARM_UPS) && WARM_UPS >= 0))
  throw new Error('--warm-ups: a whole number of deployments, 0 or more');
const REAL_AGENTS = 2;

const now = () => performance.timeOrigin + performance.now();
/** The clock of V8's CPU profiles (µs), for bench/shared/cpu-profile.ts's bounds. */
const monotonicUs = () => process.hrtime.bigint() / 1000n;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mark = (ok: boolean) => (ok ? '✓' : '✗');
const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;

function status(pid: number): { rssKiB: number; hwmKiB: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1] ?? 0);
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') };
}

/** CPU (ms) of this database's PostgreSQL backends, by pid (a pool's backends live as long as the pool). */
async function backendCpu(db: pg.Client): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return new Map(rows.map((r) => [r.pid, processCpu(r.pid).self]));
}

function cpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let sum = 0;
  // A backend that started in between counts from 0; one that ended is lost (rare in a pool).
  for (const [pid, cpu] of after) sum += cpu - (before.get(pid) ?? 0);
  return sum;
}

interface Row {
  n: number;
  connectS: number;
  sessionsEnded: number;
  /** Sessions that ended or could not start during the connect storm, by reason. */
  stormEndReasons: Record<string, number>;
  rssIdleKiB: number;
  hwmKiB: number;
  idleServerPercent: number;
  idlePgPercent: number;
  /** Heartbeats the simulated agents sent a second over the idle window. */
  idleHeartbeatsPerSecond: number;
  firstRunTaskMs: number;
  refillP95Ms: number;
  refillMaxMs: number;
  refillMeanMs: number;
  /** Little's law for a window always full of tasks that take no time: window ÷ steady tasks/s. */
  windowOverRateMs: number;
  wallS: number;
  tasksPerSecond: number;
  exactlyOnce: boolean;
  problems: string[];
  where: string;
  timeline: string;
  /** CPU ms per task in the deployment's window: the server, its PostgreSQL backends, the simulators, the rest of the machine. */
  cpuPerTask: { server: number; postgres: number; sims: number; rest: number };
  /** CPU ms per session welcomed in the connect storm (N, plus those that ended and were redone). */
  cpuPerConnect: { server: number; postgres: number; sims: number };
  /** From the simulators told to stop to every simulated machine recorded disconnected. */
  disconnectsS: number;
  /** CPU ms per simulated agent over that time. */
  cpuPerDisconnect: { server: number; postgres: number };
}

async function runSize(n: number): Promise<Row> {
  const database = await freshDatabase('gantry_bench_fleet');
  const sims: Sim[] = [];
  const db = new pg.Client({ connectionString: database.url });
  let stopPlane = async () => {};
  try {
    const plane = await startControlPlane({
      databaseUrl: database.url,
      env: {
        GANTRY_METRICS_PORT: 'off',
        ...(HEARTBEATS_PER_SECOND ? { GANTRY_AGENT_HEARTBEATS_PER_SECOND: HEARTBEATS_PER_SECOND } : {}),
      },
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', `${PROFILE_DIR}/n${n}`] : [],
    });
    // SIGTERM: a profile is written when the process exits on its own.
    // A profile of a long run at 10,000 takes longer to write than the default grace.
    stopPlane = () => stopProcess(plane.child, PROFILE_DIR ? 120_000 : undefined);
    await db.connect();
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    const staging = workspace.environments.Staging!;
    const window = Math.min(WINDOW, n + REAL_AGENTS);
    const settings = await client.put('/api/organization/settings', { maxParallelMachines: window });
    if (settings.status !== 200) throw new Error(`PUT /api/organization/settings: ${settings.status} ${settings.text}`);

    // The real agents first (startMachines looks for them on the first page of machines).
    await startMachines(
      plane,
      client,
      workspace.workspaceId,
      Array.from({ length: REAL_AGENTS }, (_, i) => ({ name: `real-${i + 1}`, environmentIds: [staging] })),
    );
    // The simulated machines, registered as an agent's Register would leave them (credential hash
    // only); then the connect storm: every simulated agent at once, as after a replica restart.
    const agents = await seedSimulatedMachines(db, workspace.workspaceId, staging, n);
    const pid = plane.child.pid!;
    const stormBefore = { server: processCpu(pid).self, postgres: await backendCpu(db) };
    const started = await startSims(plane, agents, SIMS, {
      taskMs: [TASK_MIN_MS, TASK_MAX_MS],
      channelOptions: AGENT_KEEPALIVE_MS ? { 'grpc.keepalive_time_ms': Number(AGENT_KEEPALIVE_MS) } : {},
    });
    sims.push(...started.sims);
    const connectS = started.connectMs / 1000;
    // Per session welcomed: a simulated agent whose session ended in the storm connected again.
    const stormReport = await reportSims(sims);
    const stormSessions = n + stormReport.sessionsEnded;
    const cpuPerConnect = {
      server: (processCpu(pid).self - stormBefore.server) / stormSessions,
      postgres: cpuDelta(stormBefore.postgres, await backendCpu(db)) / stormSessions,
      sims: sims.reduce((sum, sim) => sum + processCpu(sim.child.pid!).self, 0) / stormSessions,
    };

    // Idle: heartbeats only (the agents beat at a random phase of the interval).
    await sleep(5_000);
    const serverBefore = processCpu(pid).self;
    const pgBefore = await backendCpu(db);
    const beatsBefore = (await reportSims(sims)).heartbeats;
    const idleStart = now();
    const idleMono = monotonicUs();
    await sleep(IDLE_S * 1000);
    const idleMs = now() - idleStart;
    if (PROFILE_DIR) console.log(`idle window (bench/shared/cpu-profile.ts FILE ${idleMono} ${monotonicUs()})`);
    const idleServerPercent = ((processCpu(pid).self - serverBefore) / idleMs) * 100;
    const idlePgPercent = (cpuDelta(pgBefore, await backendCpu(db)) / idleMs) * 100;
    const idleHeartbeatsPerSecond = ((await reportSims(sims)).heartbeats - beatsBefore) / (idleMs / 1000);
    const rssIdleKiB = status(pid).rssKiB;

    // One deployment to all, in a rolling group of `window`.
    const project = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
      { name: 'Everywhere', script: SCRIPT },
    ]);
    const group = await client.post('/api/project/rolling-group', {
      projectId: project.projectId,
      name: 'Fleet',
      memberStepIds: [project.stepIds.Everywhere],
      windowSize: window,
    });
    if (group.status !== 200) throw new Error(`POST /api/project/rolling-group: ${group.status} ${group.text}`);
    const cut = async (version: string): Promise<string> => {
      const release = await client.post('/api/release', { projectId: project.projectId, version });
      if (release.status !== 200) throw new Error(`POST /api/release: ${release.status} ${release.text}`);
      return release.body.releaseId as string;
    };
    /** Deploys a release to Staging; answers once the deployment is final. */
    const deploy = async (releaseId: string) => {
      const requestedAt = now();
      const deployed = await client.post('/api/release/deploy', {
        releaseId,
        environments: ['Staging'],
      });
      if (deployed.status !== 200) throw new Error(`POST /api/release/deploy: ${deployed.status} ${deployed.text}`);
      const deploymentId = deployed.body.deploymentIds[0] as string;
      const final = await waitFor(
        async () => {
          const { rows } = await db.query<{ status: string; completed_at: Date | null }>(
            'select status, completed_at from deployments where id = $1',
            [deploymentId],
          );
          const row = rows[0];
          return row && isFinalStatus(row.status) ? row : null;
        },
        { timeoutMs: 600_000, intervalMs: 100, description: `the deployment to ${n + REAL_AGENTS} machines` },
      );
      return { requestedAt, deploymentId, final };
    };
    for (let w = 0; w < WARM_UPS; w++) {
      const { final } = await deploy(await cut(`0.0.${w}`));
      if (final.status !== 'Completed') throw new Error(`warm-up deployment ${w + 1}: ${final.status}`);
    }
    const releaseId = await cut('1.0.0');
    // Where the two cores go during the deployment (the simulators stand for other hosts).
    const simCpu = () => sims.reduce((sum, sim) => sum + processCpu(sim.child.pid!).self, 0);
    const cpuBefore = {
      server: processCpu(pid).self,
      postgres: await backendCpu(db),
      sims: simCpu(),
      busy: machineBusy(),
    };
    const deployMono = monotonicUs();
    const { requestedAt, deploymentId, final } = await deploy(releaseId);
    const tasksRun = n + REAL_AGENTS;
    const server = (processCpu(pid).self - cpuBefore.server) / tasksRun;
    const postgres = cpuDelta(cpuBefore.postgres, await backendCpu(db)) / tasksRun;
    const simsCpu = (simCpu() - cpuBefore.sims) / tasksRun;
    const cpuPerTask = {
      server,
      postgres,
      sims: simsCpu,
      rest: (machineBusy() - cpuBefore.busy) / tasksRun - server - postgres - simsCpu,
    };
    if (PROFILE_DIR) console.log(`deployment window (bench/shared/cpu-profile.ts FILE ${deployMono} ${monotonicUs()})`);
    const hwmKiB = status(pid).hwmKiB;
    const report = await reportSims(sims);

    // Correctness: one task per machine, each Succeeded; each simulated agent got exactly one RunTask.
    const problems: string[] = [];
    if (final.status !== 'Completed') problems.push(`deployment ${final.status}`);
    const { rows: tasks } = await db.query<{ machine_id: string; status: string; count: string }>(
      `select machine_id, min(status) as status, count(*) as count from deployment_tasks
       where deployment_id = $1 group by machine_id`,
      [deploymentId],
    );
    if (tasks.length !== n + REAL_AGENTS) problems.push(`${tasks.length} machines had a task, not ${n + REAL_AGENTS}`);
    const notOnce = tasks.filter((t) => t.count !== '1' || t.status !== 'Succeeded');
    if (notOnce.length > 0) problems.push(`${notOnce.length} machines without exactly one Succeeded task`);
    // The measured deployment's RunTasks (a warm-up's all arrived before its deploy request).
    const runs = report.runs.filter(([, at]) => at >= requestedAt);
    const perAgent = new Map<number, number>();
    for (const [i] of runs) perAgent.set(i, (perAgent.get(i) ?? 0) + 1);
    if (perAgent.size !== n || [...perAgent.values()].some((c) => c !== 1))
      problems.push(`RunTasks: ${runs.length} to ${perAgent.size} of ${n} simulated agents`);
    const repeated = report.repeatedRunTasks;
    if (repeated > 0) problems.push(`${repeated} RunTasks sent again`);

    // Every simulated agent leaves at once (a network cut, or the agents of a stopping replica):
    // until the server has recorded each of them disconnected.
    const leaving = { at: now(), server: processCpu(pid).self, postgres: await backendCpu(db) };
    await Promise.all(sims.map(stopSim));
    await waitFor(
      async () => {
        const { rows } = await db.query<{ count: number }>(
          'select count(*)::int as count from machines where disconnected_at is not null',
        );
        return rows[0]!.count >= n;
      },
      { timeoutMs: 120_000, intervalMs: 50, description: `${n} machines recorded disconnected` },
    );
    const disconnectsS = (now() - leaving.at) / 1000;
    const cpuPerDisconnect = {
      server: (processCpu(pid).self - leaving.server) / n,
      postgres: cpuDelta(leaving.postgres, await backendCpu(db)) / n,
    };

    // Slot free → next RunTask: the k-th result written frees the slot the (window + k)-th RunTask fills.
    const arrivals = runs.map(([, at]) => at).sort((a, b) => a - b);
    const results = runs.map(([, , done]) => done).sort((a, b) => a - b);
    const simWindow = Math.min(window, n);
    const refills: number[] = [];
    for (let k = 0; simWindow + k < arrivals.length; k++) refills.push(arrivals[simWindow + k]! - results[k]!);
    // Where a refill's time goes, from the tasks' own times (same host, same clock): the result
    // written by the agent → stored (finished_at); the k-th stored end → the (window + k)-th start
    // (dispatched_at); a task's start → its RunTask at the agent.
    const { rows: times } = await db.query<{ machine_id: string; dispatched_at: Date; finished_at: Date }>(
      'select machine_id, dispatched_at, finished_at from deployment_tasks where deployment_id = $1',
      [deploymentId],
    );
    const byMachine = new Map(times.map((t) => [t.machine_id, t]));
    const stored: number[] = [];
    const delivered: number[] = [];
    for (const [i, at, done] of runs) {
      const task = byMachine.get(agents[i]!.machineId);
      if (!task) continue;
      stored.push(task.finished_at.getTime() - done);
      delivered.push(at - task.dispatched_at.getTime());
    }
    const simTasks = runs.map(([i]) => byMachine.get(agents[i]!.machineId)).filter((t) => t !== undefined);
    const ends = simTasks.map((t) => t.finished_at.getTime()).sort((a, b) => a - b);
    const starts = simTasks.map((t) => t.dispatched_at.getTime()).sort((a, b) => a - b);
    const decided: number[] = [];
    for (let k = 0; simWindow + k < starts.length; k++) decided.push(starts[simWindow + k]! - ends[k]!);
    const p = (values: number[]) => `${percentile(values, 50).toFixed(0)} / ${percentile(values, 95).toFixed(0)}`;
    const where = `result → stored ${p(stored)} ms; stored end → next start ${p(decided)} ms; start → RunTask at the agent ${p(delivered)} ms (p50 / p95)`;
    const completedAt = final.completed_at!.getTime();
    const wallS = (completedAt - requestedAt) / 1000;
    // The refills' steady rate: RunTasks per second from the first refill to the last.
    const refilled = arrivals.slice(simWindow);
    const steadyRate =
      refilled.length > 1 ? (refilled.length - 1) / ((refilled.at(-1)! - refilled[0]!) / 1000) : Number.NaN;
    const at = (t: number | undefined) => (t === undefined ? '–' : `${(t - requestedAt).toFixed(0)}`);
    // The real agents' tasks run a real script (a process started): a fixed time whatever N is.
    const simMachines = new Set(agents.map((a) => a.machineId));
    const realTasks = times.filter((t) => !simMachines.has(t.machine_id));
    const real = realTasks.map((t) => `${at(t.dispatched_at.getTime())} → ${at(t.finished_at.getTime())}`).join(', ');
    const timeline =
      `first / last start stored ${at(starts[0])} / ${at(starts.at(-1))} ms; first / last RunTask at an agent ` +
      `${at(arrivals[0])} / ${at(arrivals.at(-1))} ms; last result sent ${at(results.at(-1))} ms, stored ` +
      `${at(ends.at(-1))} ms; the real agents' tasks started → ended ${real} ms; deployment Completed ` +
      `${at(completedAt)} ms (after the deploy request)`;
    return {
      n,
      connectS,
      sessionsEnded: report.sessionsEnded,
      stormEndReasons: stormReport.endReasons,
      rssIdleKiB,
      hwmKiB,
      idleServerPercent,
      idlePgPercent,
      idleHeartbeatsPerSecond,
      firstRunTaskMs: (arrivals[0] ?? Number.NaN) - requestedAt,
      refillP95Ms: percentile(refills, 95),
      refillMaxMs: refills.length > 0 ? Math.max(...refills) : Number.NaN,
      refillMeanMs: refills.length > 0 ? refills.reduce((a, b) => a + b, 0) / refills.length : Number.NaN,
      windowOverRateMs: (simWindow / steadyRate) * 1000,
      wallS,
      tasksPerSecond: (n + REAL_AGENTS) / wallS,
      exactlyOnce: problems.length === 0,
      problems,
      where,
      timeline,
      cpuPerTask,
      cpuPerConnect,
      disconnectsS,
      cpuPerDisconnect,
    };
  } finally {
    await Promise.all(sims.map(stopSim));
    await stopPlane();
    await db.end().catch(() => {});
    await cleanup();
    await database.drop();
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const n of SIZES) {
    console.error(`N = ${n} …`);
    const row = await runSize(n);
    console.error(JSON.stringify(row));
    rows.push(row);
  }
  const rates = rows.map((r) => r.tasksPerSecond);
  const flat = Math.max(...rates) / Math.min(...rates);
  const f = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
  console.log(
    `\nbench/fleet: one replica, N simulated agents + ${REAL_AGENTS} real ones, window ${WINDOW}, idle ${IDLE_S} s, step \`${SCRIPT}\`` +
      (HEARTBEATS_PER_SECOND ? `, heartbeat cap ${HEARTBEATS_PER_SECOND}/s` : '') +
      (AGENT_KEEPALIVE_MS ? `, the agents' keepalive every ${AGENT_KEEPALIVE_MS} ms` : '') +
      (WARM_UPS > 0 ? `, measured after ${WARM_UPS} warm-up deployment(s) to all` : '') +
      `${TASKS_TAKE_TIME ? `, each simulated task taking ${TASK_TIME}` : ''}\n`,
  );
  console.log(
    table(
      [
        'N',
        'connect storm',
        'server RSS idle (≤ 1 GiB)',
        'peak',
        'idle CPU server + PostgreSQL (≤ 10 %)',
        'first RunTask (≤ 250 ms)',
        'slot free → next RunTask p95 (≤ 100) / max (≤ 250)',
        'wall',
        'tasks/s (≥ 2,000)',
        'every machine once',
      ],
      rows.map((r) => [
        String(r.n),
        `${f(r.connectS, 1)} s${r.sessionsEnded > 0 ? ` (${r.sessionsEnded} sessions ended)` : ''}`,
        `${mib(r.rssIdleKiB)} ${mark(r.rssIdleKiB / 1024 <= GOAL.rssMiB)}`,
        mib(r.hwmKiB),
        `${f(r.idleServerPercent, 1)} + ${f(r.idlePgPercent, 1)} = ${f(r.idleServerPercent + r.idlePgPercent, 1)} % ${mark(r.idleServerPercent + r.idlePgPercent <= GOAL.idleCpuPercent)} (${f(r.idleHeartbeatsPerSecond)} heartbeats/s)`,
        `${f(r.firstRunTaskMs)} ms ${mark(r.firstRunTaskMs <= GOAL.firstRunTaskMs)}`,
        Number.isFinite(r.refillP95Ms)
          ? `${f(r.refillP95Ms)} / ${f(r.refillMaxMs)} ms ${mark(r.refillP95Ms <= GOAL.refillP95Ms && r.refillMaxMs <= GOAL.refillMaxMs)}`
          : 'none (window ≥ N)',
        `${f(r.wallS, 2)} s`,
        `${f(r.tasksPerSecond)} ${mark(r.tasksPerSecond >= GOAL.tasksPerSecond)}`,
        r.exactlyOnce ? '✓' : `✗ ${r.problems.join('; ')}`,
      ]),
    ),
  );
  console.log('\nWhere a refill goes (at ms resolution):');
  for (const r of rows) console.log(`- N = ${r.n}: ${r.where}`);
  // With the window always full and tasks that take no time (the default), a slot's cycle (its
  // RunTask → the next RunTask in that slot) is the refill, and Little's law fixes its mean at
  // window ÷ rate: a mean refill of 100 ms at window 500 is 5,000 tasks/s, whatever the pipeline.
  // With --task-ms the tasks bound the rate, and the refill is what the server adds.
  console.log(
    TASKS_TAKE_TIME
      ? `\nRefill with tasks taking ${TASK_TIME} (the rate is the tasks', the refill the server's):`
      : `\nRefill against Little's law (window ÷ steady RunTasks/s):`,
  );
  for (const r of rows)
    if (Number.isFinite(r.refillMeanMs))
      console.log(
        `- N = ${r.n}: refill mean ${f(r.refillMeanMs)} ms` +
          (TASKS_TAKE_TIME ? '' : `; window ÷ steady rate ${f(r.windowOverRateMs)} ms`),
      );
  console.log('\nCPU per task during the deployment (ms; the simulators stand for agents on hosts of their own):');
  for (const { n, cpuPerTask: c } of rows)
    console.log(
      `- N = ${n}: server ${f(c.server, 2)}, PostgreSQL ${f(c.postgres, 2)}, simulators ${f(c.sims, 2)}, the rest (the real agents, this bench, the kernel) ${f(c.rest, 2)}`,
    );
  console.log('\nCPU per session welcomed in the connect storm (ms; N plus the sessions that ended and were redone):');
  for (const { n, cpuPerConnect: c } of rows)
    console.log(
      `- N = ${n}: server ${f(c.server, 2)}, PostgreSQL ${f(c.postgres, 2)}, simulators (their start included) ${f(c.sims, 2)}`,
    );
  console.log('\nSessions that ended or could not start in the connect storm, by the reason the agent logged:');
  for (const { n, stormEndReasons } of rows) {
    const reasons = Object.entries(stormEndReasons).sort((a, b) => b[1] - a[1]);
    console.log(
      `- N = ${n}: ${reasons.length === 0 ? 'none' : reasons.map(([why, count]) => `${count} × ${why}`).join('; ')}`,
    );
  }
  console.log('\nEvery simulated agent leaving at once (told to stop → all recorded disconnected; CPU ms per agent):');
  for (const { n, disconnectsS, cpuPerDisconnect: c } of rows)
    console.log(`- N = ${n}: ${f(disconnectsS, 2)} s; server ${f(c.server, 2)}, PostgreSQL ${f(c.postgres, 2)}`);
  console.log('\nTimeline of the deployment:');
  for (const r of rows) console.log(`- N = ${r.n}: ${r.timeline}`);
  if (rows.length > 1)
    console.log(
      `\ntasks/s across N: max/min = ${flat.toFixed(2)} ${mark(flat <= GOAL.flatRatio)} (goal ≤ ${GOAL.flatRatio}: cost per task flat in N)`,
    );
  // A wrong result makes every figure meaningless: that is a failed run, not a missed goal.
  if (rows.some((r) => !r.exactlyOnce)) process.exitCode = 1;
}

main().catch(async (error: unknown) => {
  console.error(error);
  await cleanup();
  process.exit(1);
});
