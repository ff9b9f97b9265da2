/**
 * bench/vs-ansible: the same rolling deploy of one bash step (`echo`, then `sleep 0.2`) to N
 * targets with a window of 5, by Ansible (Debian's ansible: a playbook with `serial: 5`,
 * `gather_facts: false`; N inventory hosts over SSH to a private sshd on localhost, and again with
 * `ansible_connection: local`) and by Gantry (N real agents, a rolling group with windowSize 5),
 * rounds interleaved in one run. See bench/README.md.
 *
 *   npx tsx bench/vs-ansible/vs-ansible.ts                  (N = 10 and 50, 3 rounds)
 *   npx tsx bench/vs-ansible/vs-ansible.ts --n 10 --rounds 1   (a short run)
 *
 * Needs Debian's ansible and openssh-server: installed with apt-get when missing (as root).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { freePort } from '../../services/core/index.ts';
import {
  api,
  bashProject,
  cleanup,
  startControlPlane,
  startedAgents,
  startMachines,
  tempDir,
  workspaceOf,
  type Api,
} from '../../test/e2e/harness.ts';
import { waitFor } from '../../test/helpers/wait-for.ts';
import { processCpu } from '../deploy/cpu.ts';
import { median, table } from '../deploy/stats.ts';
import { freshDatabase } from '../shared/database.ts';

const WINDOW = 5;
const SLEEP_S = 0.2;
const GOAL = { wallOverFloor: 1.15, overheadRatio: 40 };

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const SIZES = (option('--n') ?? '10,50').split(',').map(Number);
const ROUNDS = Number(option('--rounds') ?? 3);
const MAX_N = Math.max(...SIZES);

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mark = (ok: boolean) => (ok ? '✓' : '✗');
const f = (v: number, digits = 2) => (Number.isFinite(v) ? v.toFixed(digits) : '–');
const floorS = (n: number) => Math.ceil(n / WINDOW) * SLEEP_S;

function ensureTools(): void {
  const missing = [
    ['ansible-playbook', 'ansible'],
    ['/usr/sbin/sshd', 'openssh-server'],
    ['ssh', 'openssh-client'],
  ].filter(([command]) => spawnSync('sh', ['-c', `command -v ${command}`]).status !== 0);
  if (missing.length === 0) return;
  const packages = missing.map(([, pkg]) => pkg!);
  console.error(`installing ${packages.join(', ')} with apt-get …`);
  execFileSync('apt-get', ['update'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...packages], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/** A private sshd on 127.0.0.1 (its own host key, config and authorized key), as root. */
async function startSshd(folder: string): Promise<{ port: number; key: string; child: ChildProcess }> {
  const hostKey = path.join(folder, 'host_ed25519');
  const key = path.join(folder, 'client_ed25519');
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', hostKey]);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
  writeFileSync(path.join(folder, 'authorized_keys'), readFileSync(`${key}.pub`), { mode: 0o600 });
  const port = await freePort();
  const config = path.join(folder, 'sshd_config');
  writeFileSync(
    config,
    [
      `Port ${port}`,
      'ListenAddress 127.0.0.1',
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${path.join(folder, 'authorized_keys')}`,
      `PidFile ${path.join(folder, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      // Five hosts connect at once per window: room for them (defaults: 10:30:100, 10 sessions).
      'MaxStartups 100:30:200',
      'MaxSessions 100',
      'Subsystem sftp internal-sftp',
    ].join('\n') + '\n',
  );
  mkdirSync('/run/sshd', { recursive: true });
  const child = spawn('/usr/sbin/sshd', ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let errors = '';
  child.stderr.on('data', (d: Buffer) => (errors += d.toString()));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`sshd exited: ${errors}`);
      return spawnSync('ssh', [...sshOptions(port, key), 'root@127.0.0.1', 'true']).status === 0;
    },
    { timeoutMs: 15_000, intervalMs: 200, description: 'the private sshd' },
  );
  return { port, key, child };
}

const sshOptions = (port: number, key: string) => [
  '-p',
  String(port),
  '-i',
  key,
  '-o',
  'StrictHostKeyChecking=no',
  '-o',
  'UserKnownHostsFile=/dev/null',
  '-o',
  'LogLevel=ERROR',
  '-o',
  'BatchMode=yes',
];

interface Round {
  wallS: number;
  cpuMs: number;
  ok: boolean;
  problem?: string;
}

/** One ansible-playbook run; wall from spawn to exit; CPU of its process tree (+ sshd's sessions). */
async function ansibleRound(
  folder: string,
  n: number,
  mode: 'ssh' | 'local',
  sshd: { port: number; key: string; child: ChildProcess },
  round: number,
): Promise<Round> {
  const dir = path.join(folder, `${mode}-${n}-${round}`);
  mkdirSync(dir, { recursive: true });
  const marker = path.join(dir, 'ran.txt');
  const hosts = Array.from({ length: n }, (_, i) => `t${String(i + 1).padStart(2, '0')}`);
  const hostVars =
    mode === 'ssh'
      ? `ansible_host=127.0.0.1 ansible_port=${sshd.port} ansible_user=root ansible_ssh_private_key_file=${sshd.key} ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'`
      : 'ansible_connection=local ansible_python_interpreter=/usr/bin/python3';
  writeFileSync(path.join(dir, 'inventory.ini'), `[targets]\n${hosts.map((h) => `${h} ${hostVars}`).join('\n')}\n`);
  writeFileSync(
    path.join(dir, 'playbook.yml'),
    [
      '- hosts: targets',
      `  serial: ${WINDOW}`,
      '  gather_facts: false',
      '  tasks:',
      '    - name: step',
      `      shell: "echo hello from {{ inventory_hostname }}; sleep ${SLEEP_S}; echo {{ inventory_hostname }} >> ${marker}"`,
    ].join('\n') + '\n',
  );
  const timeFile = path.join(dir, 'time.txt');
  const sshdBefore = processCpu(sshd.child.pid!);
  const start = now();
  const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
    // /usr/bin/time: the CPU of ansible-playbook and every process it waited for (its forks, ssh).
    const child = spawn(
      '/usr/bin/time',
      ['-f', '%U %S', '-o', timeFile, 'ansible-playbook', '-i', 'inventory.ini', 'playbook.yml'],
      {
        cwd: dir,
        env: {
          ...process.env,
          ANSIBLE_HOST_KEY_CHECKING: 'False',
          ANSIBLE_RETRY_FILES_ENABLED: 'False',
          // A fresh SSH control folder per run: a CI job starts without open connections.
          ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(dir, 'cp'),
          ANSIBLE_LOCAL_TEMP: path.join(dir, 'tmp'),
          ANSIBLE_NOCOLOR: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
  const wallS = (now() - start) / 1000;
  const [user = 0, system = 0] = readFileSync(timeFile, 'utf8').trim().split('\n').at(-1)!.split(' ').map(Number);
  const sshdAfter = processCpu(sshd.child.pid!);
  const cpuMs = (user + system) * 1000 + (mode === 'ssh' ? sshdAfter.children - sshdBefore.children : 0);
  const ran = existsSync(marker) ? readFileSync(marker, 'utf8').trim().split('\n').sort() : [];
  const once = ran.length === n && hosts.every((h, i) => ran[i] === h);
  const ok = result.code === 0 && once;
  return {
    wallS,
    cpuMs,
    ok,
    problem: ok
      ? undefined
      : `ansible ${mode} exit ${result.code}, ${ran.length} of ${n} ran: ${result.output.slice(-500)}`,
  };
}

/** CPU (ms) of this database's PostgreSQL backends, by pid. */
async function backendCpu(db: pg.Client): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
  );
  return new Map(rows.map((r) => [r.pid, processCpu(r.pid).self]));
}

interface GantryRig {
  client: Api;
  db: pg.Client;
  planePid: number;
  agentPids: number[];
  /** Per N: the project whose step runs on that many machines, in a rolling group of WINDOW. */
  projects: Map<number, string>;
  versions: number;
}

/** One deployment; wall from the deploy request to the deployment's CompleteDate (same host, same clock). */
async function gantryRound(rig: GantryRig, n: number): Promise<Round> {
  const projectId = rig.projects.get(n)!;
  const release = await rig.client.post('/api/release', { projectId, version: `1.0.${++rig.versions}` });
  if (release.status !== 200) throw new Error(`POST /api/release: ${release.status} ${release.text}`);
  const cpu = () => {
    let sum = processCpu(rig.planePid).self;
    for (const pid of rig.agentPids) {
      const c = processCpu(pid);
      sum += c.self + c.children;
    }
    return sum;
  };
  const pgBefore = await backendCpu(rig.db);
  const cpuBefore = cpu();
  const start = now();
  const deployed = await rig.client.post('/api/release/deploy', {
    releaseId: release.body.releaseId,
    environments: ['Staging'],
  });
  if (deployed.status !== 200) throw new Error(`POST /api/release/deploy: ${deployed.status} ${deployed.text}`);
  const id = deployed.body.deploymentIds[0] as string;
  const final = await waitFor(
    async () => {
      const { rows } = await rig.db.query<{ status: string; completed_at: Date | null }>(
        'select status, completed_at from deployments where id = $1',
        [id],
      );
      return rows[0] && ['Completed', 'Failed', 'Cancelled'].includes(rows[0].status) ? rows[0] : null;
    },
    { timeoutMs: 120_000, intervalMs: 20, description: 'the Gantry deployment' },
  );
  const wallS = (final.completed_at!.getTime() - start) / 1000;
  await sleep(200); // the agents' last acknowledgements
  const pgAfter = await backendCpu(rig.db);
  let pgMs = 0;
  for (const [pid, ms] of pgAfter) pgMs += ms - (pgBefore.get(pid) ?? 0);
  const cpuMs = cpu() - cpuBefore + pgMs;
  const { rows } = await rig.db.query<{ count: string }>(
    `select count(distinct machine_id) as count from deployment_tasks where deployment_id = $1 and status = 'Succeeded'`,
    [id],
  );
  const { rows: all } = await rig.db.query<{ count: string }>(
    'select count(*) as count from deployment_tasks where deployment_id = $1',
    [id],
  );
  const ok = final.status === 'Completed' && rows[0]!.count === String(n) && all[0]!.count === String(n);
  return {
    wallS,
    cpuMs,
    ok,
    problem: ok ? undefined : `Gantry ${final.status}: ${rows[0]!.count} of ${n} succeeded, ${all[0]!.count} tasks`,
  };
}

async function main(): Promise<void> {
  ensureTools();
  const folder = tempDir('gantry-bench-vs-ansible-');
  const sshd = await startSshd(folder);
  const database = await freshDatabase('gantry_bench_vs_ansible');
  const db = new pg.Client({ connectionString: database.url });
  try {
    const plane = await startControlPlane({ databaseUrl: database.url, env: { GANTRY_METRICS_PORT: 'off' } });
    await db.connect();
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    const tags = new Map<number, string>();
    for (const n of SIZES) {
      const tag = await client.post('/api/tag', { workspaceId: workspace.workspaceId, name: `first-${n}` });
      if (tag.status !== 200) throw new Error(`POST /api/tag: ${tag.status} ${tag.text}`);
      tags.set(n, tag.body.tagId as string);
    }
    // MAX_N agents; machine i carries the tag of every N it is among the first of.
    const machines = Array.from({ length: MAX_N }, (_, i) => ({
      name: `target-${String(i + 1).padStart(2, '0')}`,
      environmentIds: [workspace.environments.Staging!],
      tagIds: SIZES.filter((n) => i < n).map((n) => tags.get(n)!),
    }));
    await startMachines(plane, client, workspace.workspaceId, machines);
    const rig: GantryRig = {
      client,
      db,
      planePid: plane.child.pid!,
      agentPids: machines.map((m) => startedAgents.get(m.name)!.child.pid!),
      projects: new Map(),
      versions: 0,
    };
    for (const n of SIZES) {
      const project = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
        {
          name: 'Step',
          script: `echo hello from $(hostname); sleep ${SLEEP_S}`,
          settings: { machineTagFilter: [{ tagIds: [tags.get(n)] }] },
        },
      ]);
      const group = await client.post('/api/project/rolling-group', {
        projectId: project.projectId,
        name: 'Rolling',
        memberStepIds: [project.stepIds.Step],
        windowSize: WINDOW,
      });
      if (group.status !== 200) throw new Error(`POST /api/project/rolling-group: ${group.status} ${group.text}`);
      rig.projects.set(n, project.projectId);
      await gantryRound(rig, n); // warm-up, not counted
    }

    type Tool = 'gantry' | 'ansible-ssh' | 'ansible-local';
    const results = new Map<string, Round[]>();
    const problems: string[] = [];
    const tools: Tool[] = ['gantry', 'ansible-ssh', 'ansible-local'];
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of SIZES) {
        // Rotated each round, so no tool always runs right after another.
        for (const tool of tools.map((_, i) => tools[(i + round) % tools.length]!)) {
          const result =
            tool === 'gantry'
              ? await gantryRound(rig, n)
              : await ansibleRound(folder, n, tool === 'ansible-ssh' ? 'ssh' : 'local', sshd, round);
          console.error(
            `round ${round + 1} N = ${n} ${tool}: ${f(result.wallS)} s${result.ok ? '' : ` ✗ ${result.problem}`}`,
          );
          if (!result.ok) problems.push(`${tool} N = ${n}: ${result.problem}`);
          const key = `${tool}:${n}`;
          results.set(key, [...(results.get(key) ?? []), result]);
        }
      }
    }

    console.log(
      `\nbench/vs-ansible: one bash step (echo; sleep ${SLEEP_S}) on N targets, window ${WINDOW}; ${ROUNDS} interleaved rounds, medians\n`,
    );
    const rows: string[][] = [];
    const summary: string[] = [];
    for (const n of SIZES) {
      const floor = floorS(n);
      const wall = (tool: Tool) => median(results.get(`${tool}:${n}`)!.map((r) => r.wallS));
      const cpu = (tool: Tool) => median(results.get(`${tool}:${n}`)!.map((r) => r.cpuMs)) / n;
      for (const tool of tools) {
        const w = wall(tool);
        rows.push([
          String(n),
          tool,
          `${f(w)} s (${results
            .get(`${tool}:${n}`)!
            .map((r) => f(r.wallS))
            .join(', ')})`,
          `${f(floor, 1)} s`,
          `${f(w - floor)} s`,
          `${f(w / floor)}×${tool === 'gantry' ? ` ${mark(w / floor <= GOAL.wallOverFloor)}` : ''}`,
          `${f(cpu(tool), 0)} ms`,
        ]);
      }
      const ratio = (wall('ansible-ssh') - floor) / (wall('gantry') - floor);
      summary.push(
        `N = ${n}: Ansible over SSH's overhead / Gantry's = ${f(ratio, 1)}× ${mark(ratio >= GOAL.overheadRatio)} (goal ≥ ${GOAL.overheadRatio}×); local: ${f((wall('ansible-local') - floor) / (wall('gantry') - floor), 1)}×`,
      );
    }
    console.log(
      table(
        [
          'N',
          'tool',
          'wall (rounds)',
          `floor (windows × ${SLEEP_S} s)`,
          'overhead',
          `wall / floor (Gantry ≤ ${GOAL.wallOverFloor})`,
          'CPU per target',
        ],
        rows,
      ),
    );
    console.log(`\n${summary.join('\n')}`);
    if (problems.length > 0) {
      console.log(`\nRuns that did not run every target once: ${problems.join('\n')}`);
      process.exitCode = 1;
    }
  } finally {
    await db.end().catch(() => {});
    sshd.child.kill('SIGTERM');
    await cleanup();
    await database.drop();
  }
}

main().catch(async (error: unknown) => {
  console.error(error);
  await cleanup();
  process.exit(1);
});
