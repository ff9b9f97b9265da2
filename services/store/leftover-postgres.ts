/**
 * The embedded PostgreSQL that an earlier run on the same data folder left running. A control
 * plane killed outright (SIGKILL, the kernel's OOM killer) cannot stop its database: the orphan
 * keeps the cluster's lock file and its port, and every later start failed with "lock file
 * postmaster.pid already exists" until someone found and killed it by hand. It is stopped here
 * before the new start — unless its parent is still a live Node process: that is another Gantry
 * using this data folder, and the start is refused with a clear message instead.
 *
 * Linux only (it reads /proc); elsewhere the database's own lock-file error stands.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../core/index.ts';

const FAST_SHUTDOWN_MS = 30_000;
const IMMEDIATE_SHUTDOWN_MS = 10_000;
const POLL_MS = 100;

/** The data folder's database belongs to a Gantry that is running (not one an earlier run left). */
export class DataFolderInUseError extends Error {}

export async function stopLeftoverPostgres(clusterDir: string, logger: Logger): Promise<void> {
  const pid = await lockedBy(clusterDir);
  if (pid === null || !isAlive(pid)) return;
  // Not (or no longer) the postmaster of this cluster: PostgreSQL's own check decides.
  if (!(await servesCluster(pid, clusterDir))) return;
  const parent = await parentOf(pid);
  const parentArgv = parent === null ? null : await commandLine(parent);
  if (parent !== null && parent !== 1 && parentArgv && /^node/.test(path.basename(parentArgv[0] ?? ''))) {
    throw new DataFolderInUseError(
      `Another Gantry (process ${parent}) is using the data folder ${path.dirname(clusterDir)}: ` +
        'stop it first, or give this one a data folder of its own (GANTRY_DATA_DIR)',
    );
  }
  logger.warn(
    { pid, clusterDir },
    'stopping the embedded PostgreSQL an earlier run left running (that run was killed before it could stop it)',
  );
  // SIGINT is PostgreSQL's fast shutdown: sessions rolled back, a clean checkpoint, the lock file removed.
  if (await stopWith(pid, 'SIGINT', FAST_SHUTDOWN_MS)) return;
  // SIGQUIT, immediate shutdown: the next start recovers from the write-ahead log.
  if (await stopWith(pid, 'SIGQUIT', IMMEDIATE_SHUTDOWN_MS)) return;
  throw new Error(`The embedded PostgreSQL an earlier run left running (process ${pid}) did not stop`);
}

async function lockedBy(clusterDir: string): Promise<number | null> {
  const text = await fs.readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => null);
  const pid = Number.parseInt(text?.split('\n', 1)[0] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, owned by a user this one may not signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function commandLine(pid: number): Promise<string[] | null> {
  const raw = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  return raw ? raw.split('\0').filter((arg) => arg.length > 0) : null;
}

/** A postgres process working in this cluster's folder (the postmaster changes into it at start). */
async function servesCluster(pid: number, clusterDir: string): Promise<boolean> {
  const argv = await commandLine(pid);
  if (!argv || path.basename(argv[0] ?? '') !== 'postgres') return false;
  const [cwd, cluster] = await Promise.all([
    fs.realpath(`/proc/${pid}/cwd`).catch(() => null),
    fs.realpath(clusterDir).catch(() => null),
  ]);
  return cwd !== null && cwd === cluster;
}

async function parentOf(pid: number): Promise<number | null> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so read after the last ')'.
  const ppid = Number.parseInt(stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[1] ?? '', 10);
  return Number.isInteger(ppid) ? ppid : null;
}

async function stopWith(pid: number, signal: NodeJS.Signals, withinMs: number): Promise<boolean> {
  try {
    process.kill(pid, signal);
  } catch {
    return !isAlive(pid);
  }
  for (let waited = 0; waited < withinMs; waited += POLL_MS) {
    if (!isAlive(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return !isAlive(pid);
}
