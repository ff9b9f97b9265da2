/**
 * bench/logs: deployment logs at volume (issue #19), measured from outside through the API as the
 * vendor's clients follow a log (`GET /api/deployment?getLogsAfter=<last tick>`).
 *
 *   npx tsx bench/logs/logs.ts                 # every scenario
 *   npx tsx bench/logs/logs.ts --only 1M       # one of: 1M, 5M, 10x200k, 4KiB
 *   npx tsx bench/logs/logs.ts --postgres --nats
 *
 * Each scenario: a fresh control plane (embedded default, or PostgreSQL + NATS), its agents, one
 * step whose script prints numbered lines carrying their print time (perl, microseconds), and a
 * follower paging through the log while it is written. Printed per scenario: lines stored per
 * second (first line visible → last line visible), print-to-visible p50/p95 (every 97th line),
 * lost / doubled / out of order (per machine, by number), server and agent RSS growth (VmHWM over
 * the RSS before the step), and the time of the first, middle and last page read afterwards
 * (request → last byte of the body, median of five reads).
 * "Visible" is when a line is readable: every 100 ms the newest stored line is read back and its
 * print time compared with now. A follower reading every line (correctness) is reported beside:
 * its pace, how long after completion it was done, and the age of the lines it read.
 * Goals: ≥ 100,000 lines/s, print-to-visible p95 ≤ 1 s (the 1M-line step), every page ≤ 50 ms,
 * RSS growth ≤ 128 MiB for server and agent, 0 lost / doubled / out of order. Goals are marked
 * ✓/✗; the bench exits non-zero only when a run itself fails (the deployment does not complete).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { isFinalStatus } from '../../services/core/index.ts';
import { machineBusy, processCpu } from '../deploy/cpu.ts';
import { percentile } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';
import {
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startedAgents,
  startMachines,
  waitForDeployment,
  workspaceOf,
  type Api,
  basicAuthorization,
} from '../../test/e2e/harness.ts';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
const usePostgres = args.includes('--postgres');
const useNats = args.includes('--nats');
/** --profile DIR: the control plane writes a V8 CPU profile there (stopped with SIGTERM at the end). */
const profileDir = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : null;

interface Scenario {
  name: string;
  agents: number;
  linesPerAgent: number;
  /** Characters of padding after the line's number and time (a 4 KiB line: ~4,060). */
  padding: number;
  latencyGoal: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: '1M', agents: 1, linesPerAgent: 1_000_000, padding: 0, latencyGoal: true },
  { name: '5M', agents: 1, linesPerAgent: 5_000_000, padding: 0, latencyGoal: false },
  { name: '10x200k', agents: 10, linesPerAgent: 200_000, padding: 0, latencyGoal: false },
  { name: '4KiB', agents: 1, linesPerAgent: 25_600, padding: 4_060, latencyGoal: false },
];

function rssKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

const mark = (ok: boolean) => (ok ? '✓' : '✗');

async function timed<T>(run: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now();
  const value = await run();
  return [value, performance.now() - started];
}

async function runScenario(scenario: Scenario): Promise<{ row: string; failed: boolean }> {
  const options: Parameters<typeof startControlPlane>[0] = {};
  const database = usePostgres ? await freshDatabase('gantry_bench_logs') : null;
  if (database) options.databaseUrl = database.url;
  if (useNats) Object.assign(options, { natsUrl: 'nats://127.0.0.1:4222', natsPrefix: `logs${Date.now()}` });
  if (profileDir) options.nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
  if (process.env.LOGS_NODE_ARGS)
    options.nodeArgs = [...(options.nodeArgs ?? []), ...process.env.LOGS_NODE_ARGS.split(' ')];
  const plane = await startControlPlane(options);
  const client: Api = api(plane.url);
  const { workspaceId, environments, defaultLifecycleId } = await workspaceOf(client);
  await client.put('/api/organization/settings', { maxParallelMachines: Math.max(8, scenario.agents) });
  await startMachines(
    plane,
    client,
    workspaceId,
    Array.from({ length: scenario.agents }, (_, i) => ({ name: `logs-${i}`, environmentIds: [environments.Staging!] })),
  );
  const pad = 'x'.repeat(scenario.padding);
  const script = `perl -MTime::HiRes=time -e '$|=0; for my $i (1..${scenario.linesPerAgent}) { printf("line-%d %.6f${pad ? ` ${pad}` : ''}\\n", $i, time) }'`;
  const { projectId } = await bashProject(client, workspaceId, defaultLifecycleId, [
    { name: 'Print', script, settings: { parallelMachines: scenario.agents } },
  ]);
  const release = await client.post('/api/release', { projectId, version: '1.0.0' });
  const serverPid = plane.child.pid!;
  const agentPids = [...startedAgents.values()].map((a) => a.child.pid!);
  const serverBefore = rssKiB(serverPid, 'VmRSS');
  const agentsBefore = agentPids.map((pid) => rssKiB(pid, 'VmRSS'));
  const cpuBefore = {
    machine: machineBusy(),
    server: processCpu(serverPid).self,
    bench: processCpu(process.pid).self,
    agents: agentPids.map((pid) => processCpu(pid)),
  };

  const deployed = await client.post('/api/release/deploy', {
    releaseId: release.body.releaseId,
    environments: ['Staging'],
  });
  const deploymentId = deployed.body.deploymentIds[0] as string;
  if (process.env.LOGS_SNAPSHOT_AFTER_MS)
    setTimeout(() => plane.child.kill('SIGUSR2'), Number(process.env.LOGS_SNAPSHOT_AFTER_MS)).unref();

  // Visibility: every 100 ms, the newest line stored (its status's LastLogDateTick) is read back
  // and its print time compared with now — how long a line takes to become readable, whatever a
  // particular reader's own pace.
  const visibility: number[] = [];
  let firstStored = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sleep(100);
      const head = await client.get('/api/deployment', { deploymentId, skipLogs: 'true' });
      const last = BigInt((head.body?.status?.LastLogDateTick as string | undefined) ?? '0');
      if (last === 0n) continue;
      const newest = await client.get('/api/deployment', { deploymentId, getLogsAfter: (last - 1n).toString() });
      const match = /^line-\d+ (\d+\.\d+)/.exec((newest.body?.logs?.[0]?.Data as string | undefined) ?? '');
      if (match) visibility.push(Date.now() - Number(match[1]) * 1000);
      if (match && !firstStored) firstStored = Date.now() / 1000;
    }
  })();

  // Follow the log as the vendor's clients do, until the deployment is final and read through.
  const seen = new Map<string, number[]>();
  const latencies: number[] = [];
  const pageSizes: number[] = [];
  let firstVisible = 0;
  let lastVisible = 0;
  let after = '';
  let lines = 0;
  let final = false;
  while (!final) {
    const read = await client.get('/api/deployment', { deploymentId, ...(after ? { getLogsAfter: after } : {}) });
    const now = Date.now() / 1000;
    const logs = read.body.logs as Array<{ Data: string; CreatedUtcTick: string; ParentLogId: string }>;
    for (const log of logs) {
      const match = /^line-(\d+) (\d+\.\d+)/.exec(log.Data);
      if (!match) continue;
      lines++;
      const number = Number(match[1]);
      const list = seen.get(log.ParentLogId) ?? [];
      list.push(number);
      seen.set(log.ParentLogId, list);
      if (number % 97 === 0) latencies.push((now - Number(match[2])) * 1000);
      if (!firstVisible) firstVisible = now;
      lastVisible = now;
    }
    if (logs.length > 0) after = logs.at(-1)!.CreatedUtcTick;
    pageSizes.push(logs.length);
    if (logs.length === 0) {
      final = isFinalStatus(read.body.status.Status);
      if (!final) await sleep(50);
    }
  }
  sampling = false;
  await sampler;
  const followerDone = Date.now() / 1000;
  const status = await waitForDeployment(client, deploymentId, 10_000);
  // LOGS_NODE_ARGS="--trace-gc" LOGS_DEBUG=1: the control plane's last full collections.
  if (process.env.LOGS_DEBUG)
    console.error(
      plane
        .output()
        .split('\n')
        .filter((line) => line.includes('Mark-Compact'))
        .slice(-15)
        .join('\n'),
    );
  if (process.env.LOGS_DEBUG)
    console.error(
      `pages read while following: ${pageSizes.length}, of which full (5,000): ${pageSizes.filter((n) => n === 5000).length}, mean ${Math.round(pageSizes.reduce((a, b) => a + b, 0) / pageSizes.length)} lines`,
    );
  const total = scenario.agents * scenario.linesPerAgent;
  const perLine = (ms: number) => ((ms * 1000) / total).toFixed(1);
  const agentsCpu = agentPids.reduce((sum, pid, i) => sum + processCpu(pid).self - cpuBefore.agents[i]!.self, 0);
  const scriptsCpu = agentPids.reduce(
    (sum, pid, i) => sum + processCpu(pid).children - cpuBefore.agents[i]!.children,
    0,
  );
  const serverCpu = processCpu(serverPid).self - cpuBefore.server;
  const benchCpu = processCpu(process.pid).self - cpuBefore.bench;
  const machineCpu = machineBusy() - cpuBefore.machine;
  cpuRows.push(
    `| ${scenario.name} | ${perLine(machineCpu)} | ${perLine(serverCpu)} | ${perLine(agentsCpu)} | ${perLine(scriptsCpu)} | ${perLine(benchCpu)} | ${perLine(machineCpu - serverCpu - agentsCpu - scriptsCpu - benchCpu)} |`,
  );
  const serverGrowth = (rssKiB(serverPid, 'VmHWM') - serverBefore) / 1024;
  const agentGrowth = Math.max(...agentPids.map((pid, i) => rssKiB(pid, 'VmHWM') - agentsBefore[i]!)) / 1024;

  let lost = 0;
  let doubled = 0;
  let disordered = 0;
  for (const numbers of seen.values()) {
    const unique = new Set(numbers);
    doubled += numbers.length - unique.size;
    lost += scenario.linesPerAgent - unique.size;
    for (let i = 1; i < numbers.length; i++) if (numbers[i]! < numbers[i - 1]!) disordered++;
  }
  lost += (scenario.agents - seen.size) * scenario.linesPerAgent;

  // Page times afterwards: the first page, one from the middle, the last.
  const all = await client.get('/api/deployment', { deploymentId, skipLogs: 'true' });
  const lastTick = BigInt(all.body.status.LastLogDateTick as string);
  const firstPage = await client.get('/api/deployment', { deploymentId });
  const firstTick = BigInt(firstPage.body.logs[0].CreatedUtcTick as string);
  // A page's time: request sent → last byte of the body received (the client's own JSON parsing
  // is not the server's), the median of five reads.
  const pageMs = async (query: Record<string, string>) => {
    const url = new URL(`${plane.url}/api/deployment`);
    for (const [k, v] of Object.entries({ deploymentId, ...query })) url.searchParams.set(k, v);
    const authorization = basicAuthorization();
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      const [, ms] = await timed(async () => (await fetch(url, { headers: { authorization } })).arrayBuffer());
      times.push(ms);
    }
    return percentile(times, 50);
  };
  const firstMs = await pageMs({});
  const middleMs = await pageMs({ getLogsAfter: ((firstTick + lastTick) / 2n).toString() });
  const lastMs = await pageMs({ getLogsAfter: (lastTick - 1_000_000n).toString() });
  if (profileDir) {
    plane.child.kill('SIGTERM');
    await new Promise((resolve) => plane.child.once('exit', resolve));
  }
  await cleanup();
  await database?.drop();

  // Stored per second: from the first line readable to the deployment's completion (its last line
  // is stored before it turns final).
  const completed = Date.parse(status.CompleteDate as string) / 1000;
  const rate = total / Math.max(0.001, completed - (firstStored || firstVisible));
  const followerLag = followerDone - completed;
  const p50 = percentile(visibility, 50);
  const p95 = percentile(visibility, 95);
  const followP95 = percentile(latencies, 95);
  const pagesOk = Math.max(firstMs, middleMs, lastMs) <= 50;
  const row =
    `| ${scenario.name} | ${total.toLocaleString('en')} | ${status.Status} | ${Math.round(rate).toLocaleString('en')} ${mark(rate >= 100_000)} | ` +
    `${p50.toFixed(0)} / ${p95.toFixed(0)} ms${scenario.latencyGoal ? ` ${mark(p95 <= 1000)}` : ''} | ${lost} / ${doubled} / ${disordered} ${mark(lost + doubled + disordered === 0)} | ` +
    `${serverGrowth.toFixed(0)} MiB ${mark(serverGrowth <= 128)} | ${agentGrowth.toFixed(0)} MiB ${mark(agentGrowth <= 128)} | ` +
    `${firstMs.toFixed(0)} / ${middleMs.toFixed(0)} / ${lastMs.toFixed(0)} ms ${mark(pagesOk)} | ` +
    `${Math.round(lines / Math.max(0.001, lastVisible - firstVisible)).toLocaleString('en')} lines/s, done ${followerLag.toFixed(1)} s after completion, line age p95 ${(followP95 / 1000).toFixed(1)} s |`;
  return { row, failed: status.Status !== 'Completed' };
}

console.log(
  `Log volume on ${usePostgres ? 'PostgreSQL' : 'the embedded PostgreSQL'} + ${useNats ? 'NATS JetStream' : 'the in-process bus'}\n`,
);
console.log(
  '| scenario | lines | outcome | stored/s (≥ 100,000) | print → visible p50 / p95 (≤ 1 s) | lost / doubled / out of order | server RSS growth (≤ 128) | agent RSS growth (≤ 128) | page first / middle / last (≤ 50 ms) | one follower reading every line |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|');
let failed = false;
const cpuRows: string[] = [];
for (const scenario of SCENARIOS.filter((s) => !only || s.name === only)) {
  const { row, failed: runFailed } = await runScenario(scenario);
  console.log(row);
  failed ||= runFailed;
}
console.log(
  '\nCPU per line (µs): the whole machine, the control plane, the agents, their scripts, this bench (the follower), the rest (PostgreSQL)\n',
);
console.log('| scenario | machine | control plane | agents | scripts | follower | rest |');
console.log('|---|---|---|---|---|---|---|');
for (const row of cpuRows) console.log(row);
process.exit(failed ? 1 : 0);
