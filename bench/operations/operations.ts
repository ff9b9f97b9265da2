/**
 * bench/operations: the two whole-installation operations at the sizes an installation reaches.
 *
 * - Master key rotation (`npm run rotate-master-key`, run as a process): an installation with
 *   `--values` Sensitive values and `--releases` releases whose snapshots each hold one, made
 *   through the API once and multiplied in SQL (the same sealed value in every row: each is still
 *   opened and resealed on its own). Reports its wall time and values resealed per second, and
 *   checks every value opens with the new key and none with the old.
 * - Log retention (engine/log-retention.ts): one finished deployment per `--log-lines` size, its
 *   lines stored as an agent stores them (chunks of 1,000), then removed by the retention sweep.
 *   Reports the removal's wall time and checks nothing of the log is left but the line saying so.
 *
 *   npx tsx bench/operations/operations.ts
 *   npx tsx bench/operations/operations.ts --values 100000 --releases 20000 --log-lines 1000000,5000000
 */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createSecretBox, masterKeyCheck } from '../../services/core/index.ts';
import { removeExpiredLogs } from '../../services/engine/index.ts';
import { createDb, createStore } from '../../services/store/index.ts';
import {
  api,
  bashProject,
  cleanup,
  releaseAndDeploy,
  startControlPlane,
  stopProcess,
  tempDir,
  waitForDeployment,
  workspaceOf,
} from '../../test/e2e/harness.ts';
import { freshDatabase } from '../shared/database.ts';
import { appendLongLog } from '../shared/long-log.ts';
import { table } from '../deploy/stats.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
const VALUES = Number(option('--values', '50000'));
const RELEASES = Number(option('--releases', '10000'));
const LOG_LINES = option('--log-lines', '1000000,5000000').split(',').map(Number);
/** The harness's control planes are started with this key (test/e2e/harness.ts). */
const HARNESS_KEY = Buffer.alloc(32, 3).toString('base64');
const NEW_KEY = Buffer.alloc(32, 4).toString('base64');
const DAY_MS = 24 * 60 * 60 * 1000;

function run(command: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, command, {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => resolve({ code, out }));
  });
}

async function benchRotation(): Promise<string[]> {
  const database = await freshDatabase('gantry_bench_rotation');
  const dataDir = tempDir('gantry-bench-rotation-');
  try {
    const plane = await startControlPlane({ databaseUrl: database.url, dataDir });
    const client = api(plane.url);
    const { workspaceId } = await workspaceOf(client);
    const projectId = (await client.post('/api/project', { workspaceId, name: 'Rotated' })).body.projectId as string;
    const variableId = (
      await client.post('/api/project/variable', { projectId, name: 'Token', variableType: 'Sensitive' })
    ).body.variableId as string;
    const value = await client.post('/api/project/variable/value', { variableId, theValue: 'the-sensitive-value' });
    if (value.status !== 200) throw new Error(`variable value: ${value.text}`);
    const release = await client.post('/api/release', { projectId, version: '1.0.0' });
    if (release.status !== 200) throw new Error(`release: ${release.text}`);
    await stopProcess(plane.child);

    const db = createDb(database.url, { poolMax: 2 });
    try {
      // Copies of the one value and the one release: every column as stored, new ids (and versions).
      const copy = async (table: string, count: number, replace: Record<string, string>) => {
        const columns = (await db('information_schema.columns')
          .where({ table_name: table, is_generated: 'NEVER' })
          .orderBy('ordinal_position')
          .pluck('column_name')) as string[];
        const select = columns.map((c) => replace[c] ?? c).join(', ');
        await db.raw(
          `insert into ${table} (${columns.join(', ')}) select ${select} from ${table} t, generate_series(1, ?) i`,
          [count - 1],
        );
      };
      await copy('variable_values', VALUES, { id: "t.id || '-' || i" });
      await copy('releases', RELEASES, { id: "t.id || '-' || i", version: "'1.0.' || i" });

      const started = performance.now();
      const rotated = await run(['--import', 'tsx', 'services/rotate-master-key.ts'], {
        DATABASE_URL: database.url,
        GANTRY_DATA_DIR: dataDir,
        GANTRY_MASTER_KEY: HARNESS_KEY,
        GANTRY_NEW_MASTER_KEY: NEW_KEY,
        GANTRY_LOG_LEVEL: 'warn',
      });
      const seconds = (performance.now() - started) / 1000;
      if (rotated.code !== 0) throw new Error(`rotate-master-key exited ${rotated.code}: ${rotated.out}`);

      // Every value opens with the new key, none with the old; the check is the new key's.
      const fresh = createSecretBox(Buffer.from(NEW_KEY, 'base64'));
      const old = createSecretBox(Buffer.from(HARNESS_KEY, 'base64'));
      const sealed = (await db('variable_values').whereNotNull('value_encrypted').pluck('value_encrypted')) as string[];
      for (const snapshot of await db('releases').pluck('snapshot'))
        for (const variable of snapshot.variables)
          for (const v of variable.values) if (v.valueEncrypted) sealed.push(v.valueEncrypted as string);
      const opened = sealed.filter((s) => fresh.decrypt(s) === 'the-sensitive-value').length;
      const openedOld = sealed.filter((s) => {
        try {
          old.decrypt(s);
          return true;
        } catch {
          return false;
        }
      }).length;
      const check = (await db('master_key_check').first('key_check')).key_check as string;
      const ok =
        opened === VALUES + RELEASES && openedOld === 0 && check === masterKeyCheck(Buffer.from(NEW_KEY, 'base64'));
      if (!ok) throw new Error(`rotation check failed: ${opened} opened with the new key, ${openedOld} with the old`);
      const total = VALUES + RELEASES;
      return [
        `${VALUES.toLocaleString('en')} values + ${RELEASES.toLocaleString('en')} release snapshots`,
        `${seconds.toFixed(1)} s`,
        `${Math.round(total / seconds).toLocaleString('en')} / s`,
        `all ${total.toLocaleString('en')} open with the new key, none with the old ✓`,
      ];
    } finally {
      await db.destroy();
    }
  } finally {
    await cleanup();
    await database.drop();
  }
}

async function benchRetention(): Promise<string[][]> {
  const database = await freshDatabase('gantry_bench_retention');
  const rows: string[][] = [];
  try {
    const plane = await startControlPlane({ databaseUrl: database.url });
    const client = api(plane.url);
    const workspace = await workspaceOf(client);
    const { projectId } = await bashProject(client, workspace.workspaceId, workspace.defaultLifecycleId, [
      { name: 'Print', script: 'echo printed' },
    ]);
    const ids: string[] = [];
    for (let i = 0; i < LOG_LINES.length; i++) {
      // No machine: the deployment ends at once; its log is then made as long as wanted.
      const deploymentId = (await releaseAndDeploy(client, projectId, ['Staging'], `3.0.${i}`))[0]!;
      await waitForDeployment(client, deploymentId);
      ids.push(deploymentId);
    }
    await stopProcess(plane.child);
    const db = createDb(database.url, { poolMax: 2 });
    try {
      for (const [i, lines] of LOG_LINES.entries()) {
        const deploymentId = ids[i]!;
        await appendLongLog(db, deploymentId, lines);
        // Finished days ago, the first oldest: each sweep below removes exactly the next one.
        await db('deployments')
          .where({ id: deploymentId })
          .update({ completed_at: new Date(Date.now() - (LOG_LINES.length - i + 1) * DAY_MS) });
      }
      await db.raw('vacuum analyze deployment_log_chunks');
      const store = createStore(db);
      for (const [i, lines] of LOG_LINES.entries()) {
        const deploymentId = ids[i]!;
        // The lines' bytes as stored before compression (TOAST compresses such repetitive text well).
        const bytes = Number(
          (await db('deployment_log_chunks').where({ deployment_id: deploymentId }).sum('byte_count as n').first())!.n,
        );
        const started = performance.now();
        // Oldest first: the sweep removes exactly this one (the others finished later).
        const removed = await removeExpiredLogs({ store, clock: { now: () => new Date() }, days: 1 }, 1);
        const seconds = (performance.now() - started) / 1000;
        // A DELETE only marks the rows dead: the space is reclaimed by (auto)vacuum, timed here.
        const vacuumStarted = performance.now();
        await db.raw('vacuum deployment_log_chunks');
        const vacuumSeconds = (performance.now() - vacuumStarted) / 1000;
        const left = (await store.deploymentLogs.read(deploymentId, null, 10)).map((l) => l.data);
        const ok =
          removed.deployments === 1 && removed.lines >= lines && left.length === 1 && /was removed/.test(left[0]!);
        if (!ok) throw new Error(`retention check failed for ${lines} lines: ${JSON.stringify({ removed, left })}`);
        rows.push([
          `${lines.toLocaleString('en')} lines (${(bytes / 1024 ** 2).toFixed(0)} MiB of text)`,
          `${(seconds * 1000).toFixed(0)} ms`,
          `${vacuumSeconds.toFixed(2)} s`,
          'only the line saying so left ✓',
        ]);
      }
    } finally {
      await db.destroy();
    }
  } finally {
    await cleanup();
    await database.drop();
  }
  return rows;
}

const rotation = await benchRotation();
const retention = await benchRetention();
console.log('\nMaster key rotation (npm run rotate-master-key, a process; wall time includes its start)\n');
console.log(table(['installation', 'wall', 'resealed', 'check'], [rotation]));
console.log('\nLog retention (one finished deployment per size, removed by the sweep)\n');
console.log(table(['log', 'removal (the sweep)', 'vacuum after', 'check'], retention));
process.exit(0);
