/**
 * bench/dashboard (issue #11): the dashboard's three performance goals. See bench/README.md.
 *
 *   npx tsx bench/dashboard/dashboard.ts            (all three; the SSE part on embedded PostgreSQL + in-process bus)
 *   npx tsx bench/dashboard/dashboard.ts --nats     (the SSE part on PostgreSQL + NATS JetStream)
 *   npx tsx bench/dashboard/dashboard.ts --only overview|sse|bundle|log
 *   npx tsx bench/dashboard/dashboard.ts --only log --log-lines 100000,1000000
 *
 * 1. Overview aggregate: 500 projects × 10 environments × 20 deployments each (100 000
 *    deployments, 10 000 releases) seeded with SQL into a fresh database on the real PostgreSQL;
 *    GET /api/dashboard/overview through the production app (inject: server time, no network).
 * 2. A script line to an SSE client: N = 10 real agents run a step printing timestamped lines; a
 *    client follows the deployment over GET /api/deployment/events; latency = arrival − the
 *    script's own `date +%s%N`.
 * 3. The dashboard's initial JS + CSS (what index.html loads), gzipped.
 * 4. A long finished log opened on the deployment page in Chromium (not in the default run: it
 *    takes minutes): the time until the page shows the lines it holds (the last KEPT_LINES), and
 *    the page's JS heap then; and the whole log downloaded as text (GET /api/deployment/log).
 *
 * Prints a table with ✓/✗ per goal; exits non-zero only when a run itself fails.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { readServerSentEvents } from '../../client/index.ts';
import { buildApp } from '../../services/api/app.ts';
import { createSecretBox, systemClock } from '../../services/core/index.ts';
import { bootstrap, type DomainDeps } from '../../services/domain/index.ts';
import { createFilesystemBlobStore, createPackageService, stagingDirOf } from '../../services/packages/index.ts';
import { createDb, createStore, migrateToLatest } from '../../services/store/index.ts';
import { buildDashboard, DASHBOARD_OUT } from '../../scripts/build-dashboard.ts';
import {
  ADMIN,
  api,
  basicAuthorization,
  bashProject,
  cleanup,
  startControlPlane,
  releaseAndDeploy,
  startMachines,
  tempDir,
  waitForDeployment,
  workspaceOf,
} from '../../test/e2e/harness.ts';
import { launchBrowser, signIn } from '../../test/dashboard/browser.ts';
import { KEPT_LINES } from '../../dashboard/src/api/use-deployment-events.ts';
import { percentile, table } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';
import { appendLongLog } from '../shared/long-log.ts';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const useNats = args.includes('--nats');
const logLines = (args.includes('--log-lines') ? args[args.indexOf('--log-lines') + 1]! : '100000,1000000,5000000')
  .split(',')
  .map(Number);
const GOALS = { overviewP95Ms: 50, sseP95Ms: 100, bundleKiB: 300 };
const rows: string[][] = [];
const mark = (ok: boolean) => (ok ? '✓' : '✗');
const f1 = (n: number) => n.toFixed(1);

async function benchOverview(): Promise<void> {
  const PROJECTS = 500;
  const ENVIRONMENTS = 10;
  const PER_CELL = 20;
  const database = await freshDatabase('gantry_bench_dashboard');
  const db = createDb(database.url, { poolMax: 5 });
  const dataDir = tempDir('gantry-bench-dashboard-');
  try {
    await migrateToLatest(db);
    const deps: DomainDeps = {
      store: createStore(db),
      clock: systemClock,
      secrets: createSecretBox(Buffer.alloc(32, 1)),
    };
    const credentials = { accountId: 'bench-admin', apiKey: 'bench-admin-key-0123456789' };
    await bootstrap(deps, credentials);
    const workspace = (await db('workspaces').first('id')).id as string;
    const seedStart = performance.now();
    await db.transaction(async (trx) => {
      await trx.raw(
        `insert into environments (id, workspace_id, name, sort_order)
         select 'env-' || i, ?, 'Env ' || lpad(i::text, 2, '0'), 100 + i from generate_series(1, ?) i`,
        [workspace, ENVIRONMENTS],
      );
      await trx.raw(
        `insert into projects (id, workspace_id, name)
         select 'p-' || i, ?, 'Project ' || lpad(i::text, 4, '0') from generate_series(1, ?) i`,
        [workspace, PROJECTS],
      );
      await trx.raw(
        `insert into releases (id, workspace_id, project_id, version, snapshot, created_at)
         select 'r-' || p || '-' || k, ?, 'p-' || p, '1.0.' || k, '{"lifecycle": null}'::jsonb,
                now() - make_interval(hours => ${PER_CELL} - k)
         from generate_series(1, ?) p, generate_series(1, ?) k`,
        [workspace, PROJECTS, PER_CELL],
      );
      await trx.raw(
        `insert into deployments (id, workspace_id, project_id, release_id, environment_id, environment_name, status,
                                  created_at, started_at, completed_at, last_update_at, requested_by_id, requested_by_name)
         select 'd-' || p || '-' || e || '-' || k, ?, 'p-' || p, 'r-' || p || '-' || k, 'env-' || e, 'Env ' || e,
                case when k = ${PER_CELL} and (p + e) % 7 = 0 then 'AwaitingSlot' else 'Completed' end,
                now() - make_interval(hours => ${PER_CELL} - k, secs => e),
                now() - make_interval(hours => ${PER_CELL} - k, secs => e),
                now() - make_interval(hours => ${PER_CELL} - k, secs => e - 30),
                now(), 'bench-admin', 'Admin'
         from generate_series(1, ?) p, generate_series(1, ?) e, generate_series(1, ?) k`,
        [workspace, PROJECTS, ENVIRONMENTS, PER_CELL],
      );
    });
    await db.raw('analyze');
    const seeded = await db('deployments').count({ n: '*' }).first();
    process.stdout.write(
      `overview: seeded ${PROJECTS} projects × ${ENVIRONMENTS} environments × ${PER_CELL} deployments (${seeded?.n} rows) in ${f1((performance.now() - seedStart) / 1000)} s\n`,
    );
    const packages = createPackageService({
      deps,
      clock: systemClock,
      blobs: createFilesystemBlobStore({
        root: path.join(dataDir, 'packages'),
        publicUrl: 'http://127.0.0.1',
        hmacKey: randomBytes(32),
      }),
      stagingDir: stagingDirOf(dataDir),
    });
    const app = await buildApp({ ...deps, packages }, { logger: false });
    const authorization = `Basic ${Buffer.from(`${credentials.accountId}:${credentials.apiKey}`).toString('base64')}`;
    const time = async (take: number, skip: number) => {
      const start = performance.now();
      const response = await app.inject({
        method: 'GET',
        url: `/api/dashboard/overview?workspaceId=${workspace}&take=${take}&skip=${skip}`,
        headers: { authorization },
      });
      const elapsed = performance.now() - start;
      if (response.statusCode !== 200) throw new Error(`overview answered ${response.statusCode}: ${response.body}`);
      const body = response.json();
      const cells = body.projects.reduce((n: number, p: { cells: unknown[] }) => n + p.cells.length, 0);
      if (cells !== Math.min(take, PROJECTS - skip) * (ENVIRONMENTS + 2))
        throw new Error(`overview returned ${cells} cells`);
      return elapsed;
    };
    for (const [take, runs] of [
      [50, 200],
      [500, 40],
    ] as const) {
      for (let i = 0; i < 10; i++) await time(take, 0);
      const samples: number[] = [];
      for (let i = 0; i < runs; i++) samples.push(await time(take, (i * take) % PROJECTS));
      const p95 = percentile(samples, 95);
      rows.push([
        `overview, page of ${take} projects × ${ENVIRONMENTS + 2} environments (of ${PROJECTS} × 20 deployments each)`,
        `p50 ${f1(percentile(samples, 50))} ms, p95 ${f1(p95)} ms (${runs} requests)`,
        `p95 ≤ ${GOALS.overviewP95Ms} ms`,
        mark(p95 <= GOALS.overviewP95Ms),
      ]);
    }
    await app.close();
  } finally {
    await db.destroy();
    // GANTRY_BENCH_KEEP_DB=1 keeps the seeded database to look at query plans (psql, EXPLAIN).
    if (process.env.GANTRY_BENCH_KEEP_DB) process.stdout.write(`overview: database kept at ${database.url}\n`);
    else await database.drop();
  }
}

async function benchSse(): Promise<void> {
  const N = 10;
  const K = Number(process.env.GANTRY_BENCH_K ?? 5);
  const database = useNats ? await freshDatabase('gantry_bench_dashboard_sse') : null;
  try {
    const plane = await startControlPlane(
      useNats
        ? {
            databaseUrl: database!.url,
            natsUrl: process.env.NATS_URL || 'nats://127.0.0.1:4222',
            natsPrefix: `bench_${randomBytes(4).toString('hex')}`,
          }
        : {},
    );
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    await client.put('/api/organization/settings', { maxParallelMachines: N });
    await startMachines(
      plane,
      client,
      workspace.workspaceId,
      Array.from({ length: N }, (_, i) => ({ name: `bench-${i}`, environmentIds: [workspace.environments.Staging!] })),
    );
    const { projectId } = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
      {
        name: 'Mark',
        // A task's first line leaves the agent at once; later ones wait in its batch (≤ 100 ms).
        script:
          'echo "mark first $(date +%s%N)"; sleep 0.2; for i in 1 2 3 4; do echo "mark later $(date +%s%N)"; sleep 0.1; done',
        settings: { parallelMachines: N },
      },
    ]);
    const authorization = basicAuthorization();
    const latencies = { first: [] as number[], later: [] as number[] };
    for (let k = 0; k <= K; k++) {
      const release = await client.post('/api/release', { projectId, version: `1.0.${k}` });
      const deployed = await client.post('/api/release/deploy', {
        releaseId: release.body.releaseId,
        environments: ['Staging'],
      });
      if (deployed.status !== 200) throw new Error(`deploy answered ${deployed.status}: ${deployed.text}`);
      const response = await fetch(
        `${plane.url}/api/deployment/events?deploymentId=${deployed.body.deploymentIds[0]}`,
        {
          headers: { authorization },
        },
      );
      if (!response.ok || !response.body) throw new Error(`events answered ${response.status}`);
      let seen = 0;
      let status = '';
      for await (const event of readServerSentEvents(response.body)) {
        const nowNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
        if (event.event === 'end') status = (JSON.parse(event.data) as { Status: string }).Status;
        if (event.event !== 'logs') continue;
        for (const match of event.data.matchAll(/"Data":"mark (first|later) (\d{19})"/g)) {
          seen++;
          // The first deployment warms the path up (JIT, prepared statements): not counted.
          if (k > 0) latencies[match[1] as 'first' | 'later'].push(Number(nowNs - BigInt(match[2]!)) / 1e6);
        }
      }
      if (status !== 'Completed' || seen !== N * 5)
        throw new Error(`deployment ended ${status} with ${seen} of ${N * 5} lines`);
    }
    const layout = useNats ? 'PostgreSQL + NATS' : 'embedded PostgreSQL + in-process bus';
    for (const [kind, what] of [
      ['first', "a task's first line (the agent sends it at once)"],
      ['later', 'later lines (the agent batches them for up to 25 ms first)'],
    ] as const) {
      const samples = latencies[kind];
      const p95 = percentile(samples, 95);
      rows.push([
        `script line → SSE client, N = ${N} agents, ${layout}: ${what}`,
        `p50 ${f1(percentile(samples, 50))} ms, p95 ${f1(p95)} ms, max ${f1(Math.max(...samples))} ms (${samples.length} lines)`,
        `p95 ≤ ${GOALS.sseP95Ms} ms`,
        mark(p95 <= GOALS.sseP95Ms),
      ]);
    }
  } finally {
    await cleanup();
    await database?.drop();
  }
}

/**
 * A finished deployment with L more lines written straight into the store, as an agent's chunks
 * (a step's output is stored so, the engine's own lines one row each), opened on the deployment page: the page reads the last KEPT_LINES over the event stream
 * (`tail=`) and says how many come before, so its time and heap should not grow with L past that.
 * Then the whole log through the download the page links to, every line counted.
 */
async function benchLongLog(): Promise<void> {
  await buildDashboard({ ifStale: true, quiet: true });
  const database = await freshDatabase('gantry_bench_dashboard_log');
  const plane = await startControlPlane({ databaseUrl: database.url });
  const browser = await launchBrowser();
  try {
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    // No machine: the deployment ends at once, and its log is what is measured.
    const { projectId } = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
      { name: 'Print', script: 'echo printed' },
    ]);
    const db = createDb(database.url, { poolMax: 1 });
    try {
      for (const [i, lines] of logLines.entries()) {
        const deploymentId = (await releaseAndDeploy(client, projectId, ['Staging'], `2.0.${i}`))[0]!;
        await waitForDeployment(client, deploymentId);
        // As an agent stores what a step prints, every tenth chunk ending with a warning.
        await appendLongLog(db, deploymentId, lines, 10);
        const total = Number(
          (
            await db.raw(
              `select (select count(*) from deployment_logs where deployment_id = ?)
                    + (select coalesce(sum(line_count), 0) from deployment_log_chunks where deployment_id = ?) as n`,
              [deploymentId, deploymentId],
            )
          ).rows[0].n,
        );
        const context = await browser.newContext();
        const page = await signIn(context, plane.url, ADMIN);
        const held = Math.min(total, KEPT_LINES);
        const shown = `${held} of ${held} lines${total > held ? ` · ${(total - held).toLocaleString('en-US')} earlier not shown` : ''}`;
        const started = performance.now();
        await page.goto(`${plane.url}/deployments/${deploymentId}`);
        const counter = page.getByRole('status').filter({ hasText: 'lines' });
        const limitMs = 600_000;
        while (!((await counter.textContent({ timeout: limitMs })) ?? '').startsWith(shown)) {
          if (performance.now() - started > limitMs)
            throw new Error(`the page did not show '${shown}' in ${limitMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const seconds = (performance.now() - started) / 1000;
        // Chromium's non-standard performance.memory: the page's JS heap in use.
        const heap = await page.evaluate(
          () => (performance as unknown as { memory: { usedJSHeapSize: number } }).memory.usedJSHeapSize,
        );
        // The level filter over the whole log (the server streams the lines at that level and above).
        const warnings = Number(
          (
            await db.raw(
              `select (select count(*) from deployment_logs where deployment_id = ? and level in ('Warning', 'Error', 'Critical'))
                    + (select coalesce(sum(bit_count(levels)), 0) from deployment_log_chunks where deployment_id = ?) as n`,
              [deploymentId, deploymentId],
            )
          ).rows[0].n,
        );
        const filterStart = performance.now();
        await page.getByLabel('Level').selectOption('Warning');
        const filtered = `${Math.min(warnings, KEPT_LINES)} of ${Math.min(warnings, KEPT_LINES)} lines · searched the whole log`;
        while (!((await counter.textContent({ timeout: limitMs })) ?? '').startsWith(filtered)) {
          if (performance.now() - filterStart > limitMs)
            throw new Error(`the page did not show '${filtered}' in ${limitMs} ms`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        const filterSeconds = (performance.now() - filterStart) / 1000;
        await context.close();
        // The download: every line, counted as it streams in.
        const downloadStart = performance.now();
        const response = await fetch(`${plane.url}/api/deployment/log?deploymentId=${deploymentId}`, {
          headers: { authorization: basicAuthorization() },
        });
        if (response.status !== 200 || !response.body) throw new Error(`GET /api/deployment/log: ${response.status}`);
        let downloaded = 0;
        let bytes = 0;
        const reader = response.body.getReader();
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          bytes += read.value.length;
          for (let at = read.value.indexOf(10); at >= 0; at = read.value.indexOf(10, at + 1)) downloaded++;
        }
        const downloadSeconds = (performance.now() - downloadStart) / 1000;
        if (downloaded !== total) throw new Error(`the download held ${downloaded} lines, not ${total}`);
        rows.push([
          `a finished log of ${total.toLocaleString('en-US')} lines opened on the deployment page (Chromium)`,
          `the last ${held.toLocaleString('en-US')} lines shown in ${f1(seconds)} s; JS heap ${Math.round(heap / 2 ** 20)} MiB`,
          '—',
          '',
        ]);
        rows.push([
          `the same log filtered to "Warnings and errors" on the page (a warning every 10,000 lines)`,
          `${warnings.toLocaleString('en-US')} of ${warnings.toLocaleString('en-US')} lines shown, from the whole log, in ${f1(filterSeconds)} s`,
          '—',
          '',
        ]);
        rows.push([
          `the same log downloaded as text (GET /api/deployment/log)`,
          `${total.toLocaleString('en-US')} of ${total.toLocaleString('en-US')} lines, ${Math.round(bytes / 2 ** 20)} MiB in ${f1(downloadSeconds)} s (${Math.round(total / downloadSeconds).toLocaleString('en-US')} lines/s)`,
          '—',
          '',
        ]);
      }
    } finally {
      await db.destroy();
    }
  } finally {
    await browser.close();
    await cleanup();
    await database.drop();
  }
}

async function benchBundle(): Promise<void> {
  await buildDashboard({ ifStale: true, quiet: true });
  const html = fs.readFileSync(path.join(DASHBOARD_OUT, 'index.html'), 'utf8');
  const assets = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
  if (assets.length === 0) throw new Error('index.html loads no JS or CSS');
  const sizes = assets.map((asset) => {
    const bytes = fs.readFileSync(path.join(DASHBOARD_OUT, asset));
    return { asset, raw: bytes.length, gzip: gzipSync(bytes, { level: 9 }).length };
  });
  const gzipKiB = sizes.reduce((sum, s) => sum + s.gzip, 0) / 1024;
  rows.push([
    'dashboard initial JS + CSS, gzipped',
    `${f1(gzipKiB)} KiB (${sizes.map((s) => `${s.asset}: ${f1(s.raw / 1024)} → ${f1(s.gzip / 1024)} KiB`).join('; ')})`,
    `≤ ${GOALS.bundleKiB} KiB`,
    mark(gzipKiB <= GOALS.bundleKiB),
  ]);
}

try {
  if (!only || only === 'bundle') await benchBundle();
  if (!only || only === 'overview') await benchOverview();
  if (!only || only === 'sse') await benchSse();
  if (only === 'log') await benchLongLog();
  process.stdout.write(`\n${table(['measure', 'result', 'goal', ''], rows)}\n`);
  process.exit(0);
} catch (error) {
  process.stderr.write(
    `bench/dashboard failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  await cleanup();
  process.exit(1);
}
