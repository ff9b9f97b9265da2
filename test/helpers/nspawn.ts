/**
 * A real Debian host with a real systemd, for the install script's tests: the cached debootstrap
 * tree (scripts/fixtures/debian-tree.sh systemd, built once) under a throw-away overlay, booted with
 * `systemd-nspawn --boot`. It shares the host's network (the control plane on 127.0.0.1 is
 * reachable as it is); commands run inside through nsenter. Needs root, systemd-container and
 * overlayfs (this machine has them; scripts/ensure-system-test-deps.sh installs the packages).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait-for.ts';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export function debianTree(kind: 'systemd' | 'minbase'): string {
  return execFileSync(path.join(repoRoot, 'scripts/fixtures/debian-tree.sh'), [kind], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    timeout: 15 * 60_000,
  }).trim();
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface BootedHost {
  /** Runs `sh -c command` inside the host as root. */
  run(command: string, options?: { timeoutMs?: number; input?: string }): Promise<RunResult>;
  /** Like run, but throws with both outputs when the exit code is not 0. */
  ok(command: string, options?: { timeoutMs?: number; input?: string }): Promise<string>;
  /** The boot console so far (for failure messages). */
  console(): string;
  stop(): Promise<void>;
}

export async function bootDebian(tree: string, name = 'gantry-test'): Promise<BootedHost> {
  const base = mkdtempSync(path.join(tmpdir(), 'gantry-nspawn-'));
  const [upper, work, root] = ['upper', 'work', 'root'].map((d) => path.join(base, d)) as [string, string, string];
  for (const dir of [upper, work, root]) mkdirSync(dir);
  execFileSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${tree},upperdir=${upper},workdir=${work}`, root]);
  let consoleText = '';
  const nspawn: ChildProcess = spawn(
    'systemd-nspawn',
    ['--boot', '--register=no', '--keep-unit', '--quiet', '-M', name, '-D', root],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const append = (chunk: Buffer) => {
    consoleText = (consoleText + chunk.toString()).slice(-50_000);
  };
  nspawn.stdout?.on('data', append);
  nspawn.stderr?.on('data', append);
  const exited = new Promise<void>((resolve) => nspawn.once('exit', () => resolve()));

  const leader = (): number | null => {
    try {
      const children = readFileSync(`/proc/${nspawn.pid}/task/${nspawn.pid}/children`, 'utf8').trim().split(/\s+/);
      const pid = Number(children[0]);
      return pid > 0 ? pid : null;
    } catch {
      return null;
    }
  };

  const run = (command: string, options: { timeoutMs?: number; input?: string } = {}): Promise<RunResult> =>
    new Promise((resolve, reject) => {
      const pid = leader();
      if (pid === null) return reject(new Error(`the booted host is gone:\n${consoleText}`));
      const child = spawn('nsenter', ['-t', String(pid), '-a', '--', '/bin/sh', '-c', command], {
        stdio: ['pipe', 'pipe', 'pipe'],
        env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C.UTF-8', HOME: '/root' },
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code: code ?? -1, stdout, stderr });
      });
      // A command that exits before reading its input (or nsenter failing at once) closes the pipe:
      // the write's EPIPE would be an uncaught error of the whole run, while the exit code and the
      // output already say what happened.
      child.stdin.on('error', () => undefined);
      if (options.input) child.stdin.end(options.input);
      else child.stdin.end();
    });

  const host: BootedHost = {
    run,
    async ok(command, options) {
      const result = await run(command, options);
      if (result.code !== 0)
        throw new Error(`\`${command}\` exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
      return result.stdout;
    },
    console: () => consoleText,
    async stop() {
      if (nspawn.exitCode === null && nspawn.signalCode === null) {
        nspawn.kill('SIGTERM'); // nspawn asks the container's systemd to power off
        const timeout = setTimeout(() => nspawn.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(timeout);
      }
      try {
        execFileSync('umount', [root]);
      } catch {
        execFileSync('umount', ['-l', root]);
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(
      async () => {
        if (nspawn.exitCode !== null) throw new Error(`systemd-nspawn exited ${nspawn.exitCode}`);
        const state = (await run('systemctl is-system-running').catch(() => null))?.stdout.trim();
        return state === 'running' || state === 'degraded';
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the container to boot' },
    );
  } catch (error) {
    await host.stop();
    throw new Error(`${String(error)}\n${consoleText}`);
  }
  return host;
}
