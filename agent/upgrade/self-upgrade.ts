/**
 * The agent replacing itself with the bundle its control plane ships (UpgradeAgent in agent.proto).
 *
 * It works on the layout install.sh makes: `<prefix>/releases/<version>-<sha>/gantry-agent.mjs`
 * and `<prefix>/current`, a symbolic link to one release, which the service starts
 * (`node <prefix>/current/gantry-agent.mjs`). A new release is unpacked beside the running one,
 * self-tested, and swapped in by renaming a new link over `current` — one rename, so the
 * supervisor starts either the old release or the new one, never a half-written one. The caller
 * then exits and the supervisor (systemd Restart=always) starts the new one.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { lstat, readdir, realpath, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { extractArchive } from '../archive/index.ts';

/** The single-file agent's name inside a bundle and a release (scripts/build-agent.ts). */
export const AGENT_ENTRY = 'gantry-agent.mjs';

export interface InstallLayout {
  /** The folder holding `current` and `releases/`. */
  readonly prefix: string;
  /** The `current` link the supervisor starts the agent through. */
  readonly current: string;
  readonly releases: string;
  /** The release running now (what `current` points at). */
  readonly running: string;
}

/** Why an upgrade did not happen; the old agent goes on. */
export class UpgradeError extends Error {}

/**
 * The install layout this agent was started from (`scriptPath` is process.argv[1]), or null when
 * it was started another way (npm run agent, a copied file): such an agent cannot swap itself.
 */
export async function installLayout(scriptPath: string | undefined): Promise<InstallLayout | null> {
  if (!scriptPath) return null;
  const current = path.dirname(path.resolve(scriptPath));
  if (path.basename(current) !== 'current') return null;
  try {
    if (!(await lstat(current)).isSymbolicLink()) return null;
    const prefix = path.dirname(current);
    const releases = path.join(prefix, 'releases');
    const running = await realpath(current);
    if (path.dirname(running) !== (await realpath(releases))) return null;
    return { prefix, current, releases, running };
  } catch {
    return null;
  }
}

export interface UpgradeTarget {
  readonly version: string;
  readonly sha256: string;
  readonly sizeBytes: number;
}

export interface PrepareOptions {
  readonly layout: InstallLayout;
  readonly target: UpgradeTarget;
  /** The bundle's bytes (DownloadAgentBundle). */
  readonly download: (signal: AbortSignal) => Readable;
  /** The Node.js binary the supervisor runs the agent with (process.execPath). */
  readonly node: string;
  readonly signal: AbortSignal;
  readonly selfTestTimeoutMs?: number;
}

const SAFE_VERSION = /^[0-9A-Za-z.+-]{1,64}$/;

/**
 * Downloads, checks (size and sha256), unpacks and self-tests the new release beside the running
 * one; returns its folder. Nothing the running agent uses is touched: on any failure the partial
 * release is removed and an UpgradeError says why.
 */
export async function prepareRelease(options: PrepareOptions): Promise<string> {
  const { layout, target } = options;
  if (!SAFE_VERSION.test(target.version)) throw new UpgradeError(`refused version '${target.version}'`);
  if (!/^[0-9a-f]{64}$/.test(target.sha256)) throw new UpgradeError('refused a bundle without a sha256');
  const release = path.join(layout.releases, `${target.version}-${target.sha256.slice(0, 12)}`);
  if (release === layout.running) throw new UpgradeError(`release ${path.basename(release)} is already running`);
  const archive = path.join(layout.releases, `.download-${target.version}.tar.gz`);
  await rm(archive, { force: true });
  await rm(release, { recursive: true, force: true });
  try {
    await downloadChecked(options.download(options.signal), archive, target);
    await extractArchive(archive, release, { format: 'tar.gz', maxUnpackedBytes: 20 * target.sizeBytes + 1024 * 1024 });
    await selfTest(options.node, path.join(release, AGENT_ENTRY), target.version, options.selfTestTimeoutMs ?? 30_000);
    return release;
  } catch (error) {
    await rm(release, { recursive: true, force: true });
    if (error instanceof UpgradeError) throw error;
    throw new UpgradeError(`the new bundle could not be prepared: ${(error as Error).message}`);
  } finally {
    await rm(archive, { force: true });
  }
}

async function downloadChecked(source: Readable, file: string, target: UpgradeTarget): Promise<void> {
  const hash = createHash('sha256');
  let size = 0;
  const out = createWriteStream(file, { mode: 0o600 });
  try {
    for await (const chunk of source) {
      const buffer = chunk as Buffer;
      size += buffer.length;
      if (size > target.sizeBytes)
        throw new UpgradeError(`the bundle is larger than the ${target.sizeBytes} bytes announced`);
      hash.update(buffer);
      if (!out.write(buffer)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
    }
  } catch (error) {
    source.destroy();
    if (error instanceof UpgradeError) throw error;
    throw new UpgradeError(`the bundle download failed: ${(error as Error).message}`);
  } finally {
    await new Promise<void>((resolve, reject) =>
      out.end((error?: Error | null) => (error ? reject(error) : resolve())),
    );
  }
  const actual = hash.digest('hex');
  if (actual !== target.sha256)
    throw new UpgradeError(`the bundle failed its checksum (expected sha256 ${target.sha256}, got ${actual})`);
  if (size !== target.sizeBytes)
    throw new UpgradeError(`the bundle holds ${size} bytes, not the ${target.sizeBytes} announced`);
}

/** `node <new> --version` must print the expected version: a bundle that does not start is refused. */
function selfTest(node: string, entry: string, version: string, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    // No GANTRY_* settings (the credential stays out of it); --version exits before reading any.
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('GANTRY_')));
    execFile(node, [entry, '--version'], { timeout: timeoutMs, env, maxBuffer: 64 * 1024 }, (error, stdout, stderr) => {
      if (error)
        return reject(
          new UpgradeError(
            `the new agent did not start (self-test \`node ${AGENT_ENTRY} --version\`: ${error.message.split('\n')[0]}${stderr ? `; ${stderr.trim().split('\n').slice(-1)[0]}` : ''})`,
          ),
        );
      const printed = stdout.trim();
      if (printed !== version)
        return reject(new UpgradeError(`the new agent says it is version '${printed}', not ${version}`));
      resolve();
    });
  });
}

/**
 * Points `current` at the new release with one rename (a new link beside it, renamed over it),
 * then removes releases other than the new and the previous one (kept to roll back by hand).
 */
export async function swapTo(layout: InstallLayout, release: string): Promise<void> {
  const next = `${layout.current}.new`;
  await rm(next, { force: true });
  await symlink(release, next);
  await rename(next, layout.current);
  const keep = new Set([path.basename(release), path.basename(layout.running)]);
  for (const entry of await readdir(layout.releases)) {
    if (!keep.has(entry)) await rm(path.join(layout.releases, entry), { recursive: true, force: true }).catch(() => {});
  }
}
