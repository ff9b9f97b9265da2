/**
 * bench/cli: what a pipeline pays for push + create + deploy + wait with the gantry CLI — HTTP
 * requests and wall time of the three CLI processes — for a no-op step on one agent. Octopus's
 * CLI needed 17–18 requests and ~1.2 s for create + deploy alone. Goals: ≤ 8 requests, ≤ 300 ms
 * beyond the script's own run time.
 *
 *   npx tsx bench/cli/cli.ts            # K = 5 iterations
 *   npx tsx bench/cli/cli.ts --k 10
 *
 * A control plane (embedded PostgreSQL, in-process bus) and one agent run as processes
 * (test/e2e/harness.ts); the CLI runs as its built single file (scripts/build-cli.ts), through a
 * counting HTTP proxy in front of the control plane. Prints a Markdown table with ✓/✗; exits 1
 * only when a run itself fails.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { buildCli } from '../../scripts/build-cli.ts';
import { freePort } from '../../services/core/index.ts';
import { makeZip } from '../../test/services/packages/archives.ts';
import {
  ADMIN,
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startMachines,
  workspaceOf,
} from '../../test/e2e/harness.ts';

const GOAL_REQUESTS = 8;
const GOAL_OVERHEAD_MS = 300;
const SCRIPT = 'true';

const { values } = parseArgs({ options: { k: { type: 'string', default: '5' } } });
const K = Number(values.k);

interface Counted {
  method: string;
  path: string;
  status: number;
  /** performance.now() when the request reached the proxy and when its answer ended. */
  arrived: number;
  answered: number;
}

/** Forwards everything to `target`, recording each request (method, path, status). */
function countingProxy(port: number, target: string) {
  const seen: Counted[] = [];
  const upstream = new URL(target);
  const server = http.createServer((request, response) => {
    const record: Counted = {
      method: request.method!,
      path: new URL(request.url!, 'http://x').pathname,
      status: 0,
      arrived: performance.now(),
      answered: 0,
    };
    response.on('finish', () => (record.answered = performance.now()));
    seen.push(record);
    const forwarded = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
      },
      (answer) => {
        record.status = answer.statusCode ?? 0;
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on('error', () => response.destroy());
    request.pipe(forwarded);
  });
  return {
    seen,
    listen: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

function run(
  command: string,
  args: string[],
  env: Record<string, string> | null,
): Promise<{ code: number | null; ms: number; output: string; started: number; ended: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    // env null: this process's environment (bash with PATH alone took ~200 ms to start here).
    const child = spawn(command, args, {
      env: env === null ? process.env : { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const ended = performance.now();
      resolve({ code, ms: ended - started, output, started, ended });
    });
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
const ms = (x: number) => `${Math.round(x)} ms`;

const work = mkdtempSync(path.join(tmpdir(), 'gantry-bench-cli-'));
let failed = false;
try {
  const cli = buildCli(work);
  const proxyPort = await freePort();
  const proxyUrl = `http://127.0.0.1:${proxyPort}`;
  // Signed upload URLs point at the proxy too, so a direct upload would be counted as well.
  const plane = await startControlPlane({ env: { GANTRY_PUBLIC_URL: proxyUrl } });
  const proxy = countingProxy(proxyPort, plane.url);
  await proxy.listen();
  const admin = api(plane.url);
  const workspace = await workspaceOf(admin);
  await startMachines(plane, admin, workspace.workspaceId, [
    { name: 'bench-agent', environmentIds: [workspace.environments.Staging!] },
  ]);
  const { projectId } = await bashProject(admin, workspace.workspaceId, workspace.defaultLifecycleId, [
    { name: 'Noop', script: SCRIPT },
  ]);
  const project = (await admin.get('/api/project/details', { projectId })).body.name as string;
  const env = { GANTRY_URL: proxyUrl, GANTRY_ACCOUNT_ID: ADMIN.id, GANTRY_API_KEY: ADMIN.key, NO_COLOR: '1' };

  const rows: Array<{
    requests: number[];
    walls: number[];
    total: number;
    paths: string[];
    /** Per process: start → first request, first request → last answer, last answer → exit. */
    phases: Array<[number, number, number]>;
  }> = [];
  const scriptMs: number[] = [];
  const nodeMs: number[] = [];
  // One warm-up round (not reported): the first deployment of a project plans and caches more.
  for (let i = 0; i <= K; i++) {
    const version = `1.0.${i}`;
    const file = path.join(work, `Bench.App.${version}.zip`);
    writeFileSync(file, makeZip([{ name: 'app.txt', data: `build ${i}` }]));
    const steps = [
      ['package', 'push', file],
      ['release', 'create', '--project', project, '--version', version],
      ['release', 'deploy', '--project', project, '--version', version, '--env', 'Staging', '--wait'],
    ];
    const requests: number[] = [];
    const walls: number[] = [];
    const paths: string[] = [];
    const phases: Array<[number, number, number]> = [];
    for (const args of steps) {
      const before = proxy.seen.length;
      const result = await run(process.execPath, [cli, ...args], env);
      if (result.code !== 0) {
        failed = true;
        throw new Error(`gantry ${args.join(' ')} exited ${result.code}:\n${result.output}`);
      }
      const mine = proxy.seen.slice(before);
      requests.push(mine.length);
      walls.push(result.ms);
      paths.push(...mine.map((r) => `${r.method} ${r.path} ${r.status} (${Math.round(r.answered - r.arrived)} ms)`));
      phases.push([
        mine[0]!.arrived - result.started,
        mine.at(-1)!.answered - mine[0]!.arrived,
        result.ended - mine.at(-1)!.answered,
      ]);
    }
    scriptMs.push((await run('bash', ['-c', SCRIPT], null)).ms);
    nodeMs.push((await run(process.execPath, ['-e', '0'], null)).ms);
    if (i > 0) rows.push({ requests, walls, total: walls.reduce((a, b) => a + b, 0), paths, phases });
  }

  const total = (r: (typeof rows)[number]) => r.requests.reduce((a, b) => a + b, 0);
  const requestsMedian = median(rows.map(total));
  const wallMedian = median(rows.map((r) => r.total));
  const script = median(scriptMs);
  const overhead = wallMedian - script;
  const events = rows[0]!.paths.find((p) => p.startsWith('GET /api/deployment/events'));
  // Each path reads "METHOD /path STATUS (N ms)".
  const mode = / 200 \(/.test(events ?? '') ? 'the event stream' : 'polling (no event stream)';

  console.log(`\n## bench/cli — push + create + deploy --wait, no-op step, one agent (K = ${K}, medians)\n`);
  console.log('| | push | create | deploy + wait | total | goal |');
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| requests | ${median(rows.map((r) => r.requests[0]!))} | ${median(rows.map((r) => r.requests[1]!))} | ${median(rows.map((r) => r.requests[2]!))} | ${requestsMedian} | ≤ ${GOAL_REQUESTS} ${requestsMedian <= GOAL_REQUESTS ? '✓' : '✗'} |`,
  );
  console.log(
    `| wall | ${ms(median(rows.map((r) => r.walls[0]!)))} | ${ms(median(rows.map((r) => r.walls[1]!)))} | ${ms(median(rows.map((r) => r.walls[2]!)))} | ${ms(wallMedian)} | |`,
  );
  console.log(
    `| beyond the script's run (${ms(script)}) | | | | ${ms(overhead)} | ≤ ${GOAL_OVERHEAD_MS} ms ${overhead <= GOAL_OVERHEAD_MS ? '✓' : '✗'} |`,
  );
  console.log(
    `| of which starting Node ×3 (\`node -e 0\`: ${ms(median(nodeMs))}) | | | | ${ms(3 * median(nodeMs))} | |`,
  );
  const phase = (step: number, part: number) => ms(median(rows.map((r) => r.phases[step]![part]!)));
  console.log(
    `| start → first request | ${phase(0, 0)} | ${phase(1, 0)} | ${phase(2, 0)} | | |\n` +
      `| first request → last answer | ${phase(0, 1)} | ${phase(1, 1)} | ${phase(2, 1)} | | |\n` +
      `| last answer → exit | ${phase(0, 2)} | ${phase(1, 2)} | ${phase(2, 2)} | | |`,
  );
  console.log(`\nWaiting used: ${mode}. Requests of the last iteration:\n`);
  for (const p of rows.at(-1)!.paths) console.log(`- ${p}`);
  await proxy.close();
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await cleanup();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
