/**
 * bench/throughput: no-op deployments per minute with 10 projects × 10 (simulated) agents
 * deploying concurrently, with 50 pollers reading GET /api/deployment meanwhile; then reads per
 * second under 50 pollers against a bare Fastify route returning the same JSON, rounds interleaved;
 * POST /api/release p50/p99 from the deploying clients. See bench/README.md.
 *
 *   npx tsx bench/throughput/throughput.ts                  (60 s of deployments, 2 × 10 s read rounds each)
 *   npx tsx bench/throughput/throughput.ts --duration-s 15 --read-s 5   (a short run)
 *   npx tsx bench/throughput/throughput.ts --profile /tmp/prof         (a CPU profile of the control plane)
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { isFinalStatus } from '../../services/core/index.ts';
import {
  adoptProcess,
  api,
  bashProject,
  cleanup,
  startControlPlane,
  stopProcess,
  tempDir,
  workspaceOf,
  type Api,
  basicAuthorization,
} from '../../test/e2e/harness.ts';
import { percentile, table } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';
import { reportSims, seedSimulatedMachines, startSims, stopSim, type Sim } from '../fleet/sim-control.ts';

const GOAL = { deploymentsPerMinute: 600, readRatio: 0.5, releaseP99Ms: 100 };
const PROJECTS = 10;
const AGENTS_PER_PROJECT = 10;
const POLLERS = 50;

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const DURATION_S = Number(option('--duration-s') ?? 60);
const READ_S = Number(option('--read-s') ?? 10);
const READ_ROUNDS = Number(option('--read-rounds') ?? 2);
/** A CPU profile of the control plane, written into this folder when it stops. */
const PROFILE_DIR = option('--profile');
/** How often a deploying client asks whether its deployment finished. */
const WAIT_POLL_MS = 50;

const here = path.dirname(fileURLToPath(import.meta.url));
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mark = (ok: boolean) => (ok ? '✓' : '✗');
const f = (v: number, digits = 0) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
const authorization = basicAuthorization();

/** `count` loops GETting `url` until `until`; returns the reads that answered 200 and the failures. */
async function poll(url: string, count: number, until: () => boolean): Promise<{ ok: number; failed: number }> {
  let ok = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: count }, async () => {
      while (!until()) {
        const response = await fetch(url, { headers: { authorization } }).catch(() => null);
        if (response) await response.arrayBuffer();
        if (response?.status === 200) ok++;
        else failed++;
      }
    }),
  );
  return { ok, failed };
}

async function deployLoop(
  client: Api,
  projectId: string,
  until: () => boolean,
  out: {
    created: string[];
    releaseMs: number[];
    laterReleaseMs: number[];
    deployMs: number[];
    completed: number;
    errors: string[];
  },
): Promise<void> {
  for (let version = 1; !until(); version++) {
    const releaseStart = now();
    const release = await client.post('/api/release', { projectId, version: `1.0.${version}` });
    const releaseMs = now() - releaseStart;
    out.releaseMs.push(releaseMs);
    // Each client's first create meets the run's start (60 connections and requests at once).
    if (version > 1) out.laterReleaseMs.push(releaseMs);
    if (release.status !== 200) {
      out.errors.push(`POST /api/release: ${release.status} ${release.text.slice(0, 200)}`);
      return;
    }
    const deployStart = now();
    const deployed = await client.post('/api/release/deploy', {
      releaseId: release.body.releaseId,
      environments: ['Staging'],
    });
    if (deployed.status !== 200) {
      out.errors.push(`POST /api/release/deploy: ${deployed.status} ${deployed.text.slice(0, 200)}`);
      return;
    }
    const deploymentId = deployed.body.deploymentIds[0] as string;
    out.created.push(deploymentId);
    for (;;) {
      const state = await client.get('/api/deployment', { deploymentId, skipLogs: 'True' });
      const status = state.body?.status?.Status as string | undefined;
      if (status && isFinalStatus(status)) break;
      await sleep(WAIT_POLL_MS);
    }
    out.deployMs.push(now() - deployStart);
    out.completed++;
  }
}

async function main(): Promise<void> {
  const database = await freshDatabase('gantry_bench_throughput');
  const db = new pg.Client({ connectionString: database.url });
  let sims: Sim[] = [];
  let bare: ReturnType<typeof spawn> | null = null;
  let stopPlane = async () => {};
  try {
    const plane = await startControlPlane({
      databaseUrl: database.url,
      env: {
        GANTRY_METRICS_PORT: 'off',
        // e.g. '--import ./my-query-tracer.mjs', as bench/deploy takes it.
        ...(process.env.GANTRY_BENCH_NODE_OPTIONS ? { NODE_OPTIONS: process.env.GANTRY_BENCH_NODE_OPTIONS } : {}),
      },
      nodeArgs: PROFILE_DIR ? ['--cpu-prof', '--cpu-prof-dir', PROFILE_DIR] : [],
    });
    // SIGTERM: a profile is written when the process exits on its own.
    stopPlane = () => stopProcess(plane.child);
    await db.connect();
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    const staging = workspace.environments.Staging!;
    const projects: string[] = [];
    const agents = [];
    for (let p = 0; p < PROJECTS; p++) {
      const tag = await client.post('/api/tag', { workspaceId: workspace.workspaceId, name: `team-${p}` });
      if (tag.status !== 200) throw new Error(`POST /api/tag: ${tag.status} ${tag.text}`);
      agents.push(
        ...(await seedSimulatedMachines(db, workspace.workspaceId, staging, AGENTS_PER_PROJECT, {
          prefix: `team${p}`,
          tagIds: [tag.body.tagId],
        })),
      );
      const project = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
        { name: 'Noop', script: 'true', settings: { machineTagFilter: [{ tagIds: [tag.body.tagId] }] } },
      ]);
      projects.push(project.projectId);
    }
    ({ sims } = await startSims(plane, agents, 1));

    // Deployments: one client per project, create a release, deploy it, wait for it, again; 50 pollers meanwhile.
    const out = {
      created: [] as string[],
      releaseMs: [] as number[],
      laterReleaseMs: [] as number[],
      deployMs: [] as number[],
      completed: 0,
      errors: [] as string[],
    };
    const warm = await client.post('/api/release', { projectId: projects[0], version: '0.0.1' });
    if (warm.status !== 200) throw new Error(`POST /api/release: ${warm.status} ${warm.text}`);
    const warmDeploy = await client.post('/api/release/deploy', {
      releaseId: warm.body.releaseId,
      environments: ['Staging'],
    });
    const sample = warmDeploy.body.deploymentIds[0] as string;
    for (;;) {
      const state = await client.get('/api/deployment', { deploymentId: sample, skipLogs: 'True' });
      if (state.body?.status?.Status === 'Completed') break;
      if (['Failed', 'Cancelled'].includes(state.body?.status?.Status))
        throw new Error(`warm-up deployment ${state.body.status.Status}`);
      await sleep(50);
    }
    const readUrl = `${plane.url}/api/deployment?deploymentId=${sample}`;
    const start = now();
    let stop = false;
    const stopAt = setTimeout(() => (stop = true), DURATION_S * 1000);
    const [pollsDuring] = await Promise.all([
      poll(readUrl, POLLERS, () => stop),
      ...projects.map((projectId) => deployLoop(client, projectId, () => stop, out)),
    ]);
    clearTimeout(stopAt);
    const elapsedS = (now() - start) / 1000;

    // None lost: every deployment created is Completed, with one Succeeded task on each of its 10 machines.
    const problems = [...out.errors];
    const { rows } = await db.query<{ id: string; status: string; succeeded: string }>(
      `select d.id, d.status, count(t.id) filter (where t.status = 'Succeeded') as succeeded
       from deployments d left join deployment_tasks t on t.deployment_id = d.id
       where d.id = any($1::text[]) group by d.id, d.status`,
      [out.created],
    );
    if (rows.length !== out.created.length) problems.push(`${out.created.length - rows.length} deployments not found`);
    const wrong = rows.filter((r) => r.status !== 'Completed' || r.succeeded !== String(AGENTS_PER_PROJECT));
    if (wrong.length > 0)
      problems.push(`${wrong.length} deployments not Completed on all ${AGENTS_PER_PROJECT} machines`);
    const report = await reportSims(sims);
    const runsPerAgent = new Map<number, number>();
    for (const [i] of report.runs) runsPerAgent.set(i, (runsPerAgent.get(i) ?? 0) + 1);
    if (report.repeatedRunTasks > 0) problems.push(`${report.repeatedRunTasks} RunTasks sent again`);

    // Reads alone: Gantry and a bare Fastify route with the same JSON, rounds interleaved.
    const body = await (await fetch(readUrl, { headers: { authorization } })).text();
    const file = path.join(tempDir('gantry-bench-throughput-'), 'deployment.json');
    writeFileSync(file, body);
    bare = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'bare-server.ts'), file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    adoptProcess(bare);
    const barePort = await new Promise<string>((resolve) =>
      bare!.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );
    const bareUrl = `http://127.0.0.1:${barePort}/api/deployment?deploymentId=${sample}`;
    const reads = { gantry: [] as number[], bare: [] as number[], failed: 0 };
    for (let round = 0; round < READ_ROUNDS; round++) {
      for (const [name, url] of [
        ['gantry', readUrl],
        ['bare', bareUrl],
      ] as const) {
        let done = false;
        const timer = setTimeout(() => (done = true), READ_S * 1000);
        const t0 = now();
        const result = await poll(url, POLLERS, () => done);
        clearTimeout(timer);
        reads[name].push(result.ok / ((now() - t0) / 1000));
        reads.failed += result.failed;
      }
    }
    if (reads.failed > 0) problems.push(`${reads.failed} reads failed`);

    const perMinute = (out.completed / elapsedS) * 60;
    const gantryReads = percentile(reads.gantry, 50);
    const bareReads = percentile(reads.bare, 50);
    const ratio = gantryReads / bareReads;
    const releaseP50 = percentile(out.releaseMs, 50);
    const releaseP99 = percentile(out.releaseMs, 99);
    console.log(
      `\nbench/throughput: ${PROJECTS} projects × ${AGENTS_PER_PROJECT} simulated agents, step \`true\`, ${f(elapsedS, 1)} s of deployments with ${POLLERS} pollers; reads ${READ_ROUNDS} × ${READ_S} s per target, interleaved\n`,
    );
    console.log(
      table(
        ['measure', 'result', 'goal', ''],
        [
          [
            'no-op deployments per minute (10 clients, 50 pollers meanwhile)',
            `${f(perMinute)} (${out.completed} in ${f(elapsedS, 1)} s; deploy → final seen p50 ${f(percentile(out.deployMs, 50))} ms)`,
            `≥ ${GOAL.deploymentsPerMinute}`,
            mark(perMinute >= GOAL.deploymentsPerMinute),
          ],
          [
            'none lost',
            problems.length === 0 ? 'all Completed on all machines' : problems.join('; '),
            'all',
            mark(problems.length === 0),
          ],
          ['GET /api/deployment reads/s during the deployments', f(pollsDuring.ok / elapsedS), '', ''],
          [
            `GET /api/deployment reads/s, ${POLLERS} pollers: Gantry vs bare Fastify (median of rounds)`,
            `${f(gantryReads)} vs ${f(bareReads)} = ${f(ratio, 2)} (rounds: ${reads.gantry.map((r) => f(r)).join(', ')} vs ${reads.bare.map((r) => f(r)).join(', ')})`,
            `≥ ${GOAL.readRatio}`,
            mark(ratio >= GOAL.readRatio),
          ],
          [
            'POST /api/release p50 / p99',
            `${f(releaseP50, 1)} / ${f(releaseP99, 1)} ms (${out.releaseMs.length} creates)`,
            `p99 ≤ ${GOAL.releaseP99Ms} ms`,
            mark(releaseP99 <= GOAL.releaseP99Ms),
          ],
          [
            "the same without each client's first (the run's start)",
            `${f(percentile(out.laterReleaseMs, 50), 1)} / ${f(percentile(out.laterReleaseMs, 99), 1)} ms (${out.laterReleaseMs.length} creates)`,
            '',
            '',
          ],
        ],
      ),
    );
    if (problems.length > 0) process.exitCode = 1;
  } finally {
    bare?.kill('SIGTERM');
    await Promise.all(sims.map(stopSim));
    await stopPlane();
    await db.end().catch(() => {});
    await cleanup();
    await database.drop();
  }
}

main().catch(async (error: unknown) => {
  console.error(error);
  await cleanup();
  process.exit(1);
});
