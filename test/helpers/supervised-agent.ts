/**
 * An agent installed as install.sh lays it out (`<prefix>/releases/<version>-<sha12>/` and the
 * `<prefix>/current` link) and run under a tiny restart loop that STANDS IN FOR SYSTEMD's
 * `Restart=always`: whenever the agent process exits, the loop starts
 * `node <prefix>/current/gantry-agent.mjs` again (after 200 ms instead of RestartSec=5). That is
 * all an upgrade from the control plane needs of its supervisor; the real systemd unit is tested
 * in test/system/agent-install.system.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tar from 'tar';
import { buildAgent } from '../../scripts/build-agent.ts';

export interface BuiltBundle {
  dir: string;
  version: string;
  archive: string;
  sha256: string;
  bytes: Buffer;
}

/** Reads the bundle scripts/build-agent.ts wrote into `dir` (its manifest names the archive). */
export function readBundle(dir: string): BuiltBundle {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'agent-manifest.json'), 'utf8')) as {
    version: string;
    archive: string;
    sha256: string;
  };
  return { dir, ...manifest, bytes: readFileSync(path.join(dir, manifest.archive)) };
}

/** Builds the agent as another version (a bumped one, for upgrades) into a fresh folder. */
export function buildBundle(version: string): BuiltBundle {
  const dir = mkdtempSync(path.join(tmpdir(), `gantry-agent-${version}-`));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  buildAgent(dir, { version });
  return readBundle(dir);
}

export interface SupervisedAgent {
  prefix: string;
  home: string;
  /** How many times the loop started the agent. */
  starts(): number;
  /** The release `current` points at now (its folder name). */
  currentRelease(): string;
  output(): string;
  /** The running process (changes when the loop restarts it). */
  child(): ChildProcess | null;
  stop(): Promise<void>;
}

/** Unpacks the bundle as install.sh does and starts it under the restart loop. */
export function superviseInstalledAgent(bundle: BuiltBundle, env: Record<string, string>): SupervisedAgent {
  const prefix = mkdtempSync(path.join(tmpdir(), 'gantry-agent-prefix-'));
  const home = path.join(prefix, 'home');
  const release = path.join(prefix, 'releases', `${bundle.version}-${bundle.sha256.slice(0, 12)}`);
  mkdirSync(release, { recursive: true });
  mkdirSync(home, { mode: 0o700 });
  tar.x({ file: path.join(bundle.dir, bundle.archive), cwd: release, sync: true });
  symlinkSync(release, path.join(prefix, 'current'));

  let output = '';
  let starts = 0;
  let stopped = false;
  let current: ChildProcess | null = null;
  let restartTimer: NodeJS.Timeout | undefined;
  const start = (): void => {
    starts++;
    const child = spawn(process.execPath, [path.join(prefix, 'current', 'gantry-agent.mjs')], {
      cwd: home,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, GANTRY_AGENT_HOME: home, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const append = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    child.on('exit', (code, signal) => {
      output += `\n[restart loop] agent exited with ${code ?? signal}\n`;
      if (current === child) current = null;
      // Restart=always: any exit, whatever its code, starts the agent again.
      if (!stopped) restartTimer = setTimeout(start, 200);
    });
    current = child;
  };
  start();

  return {
    prefix,
    home,
    starts: () => starts,
    currentRelease: () => path.basename(readlinkSync(path.join(prefix, 'current'))),
    output: () => output,
    child: () => current,
    async stop() {
      stopped = true;
      clearTimeout(restartTimer);
      const child = current;
      if (child && child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(kill);
      }
      rmSync(prefix, { recursive: true, force: true });
    },
  };
}
