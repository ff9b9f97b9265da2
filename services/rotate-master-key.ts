/**
 * `npm run rotate-master-key`: reseals every Sensitive value, feed and cloud-account credential,
 * and the Sensitive values frozen in release snapshots, with a new master key, in one transaction,
 * then records the new key's check. Every control plane must be stopped (it refuses, naming them,
 * while one runs; one started meanwhile waits for it, then checks its key against the new one).
 *
 * The new key: GANTRY_NEW_MASTER_KEY (base64 of 32 bytes), or with the key in the data folder
 * (GANTRY_MASTER_KEY unset) a new random one, written to master.key.next before the transaction
 * and renamed to master.key once it committed (a start after a crash in between finishes that).
 * The keys are never printed or logged.
 *
 * Exit status: 0 rotated; 75 control planes still run (nothing changed: stop them, run it again);
 * 78 refused (a key that is not the installation's, a value it cannot open, a bad new key).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ConfigurationError, EXIT_CONFIGURATION, loadConfig, type Config } from './config.ts';
import {
  adoptNextMasterKey,
  createLogger,
  createSecretBox,
  masterKeyCheck,
  nextMasterKeyFile,
  systemClock,
  toError,
  writeNextMasterKey,
} from './core/index.ts';
import { rotateMasterKey, type RotationCounts } from './domain/index.ts';
import { installationMasterKey, openDatabase } from './server.ts';
import { createStore, DataFolderInUseError } from './store/index.ts';

/** EX_TEMPFAIL: try again later (once the control planes are stopped). */
const EXIT_REPLICAS_RUNNING = 75;

function notRotated(message: string): void {
  process.stderr.write(`The master key was not rotated: ${message}\n`);
}

function refuse(message: string, status = EXIT_CONFIGURATION): never {
  notRotated(message);
  process.exit(status);
}

function configOrExit(): Config {
  try {
    return loadConfig(process.env, []);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    refuse(error.message);
  }
}

/** The new key, and whether it was made here (then the data folder's master.key is its only copy). */
function newKeyOrExit(config: Config): { key: Buffer; generated: boolean } {
  const given = process.env.GANTRY_NEW_MASTER_KEY;
  if (given !== undefined) {
    const key = Buffer.from(given, 'base64');
    if (key.length !== 32 || key.toString('base64') !== given.trim())
      refuse('GANTRY_NEW_MASTER_KEY must be base64 of exactly 32 bytes (openssl rand -base64 32)');
    return { key, generated: false };
  }
  if (config.masterKey)
    refuse(
      'GANTRY_MASTER_KEY is set, so the new key must be given too: GANTRY_NEW_MASTER_KEY (openssl rand -base64 32), ' +
        'which every replica is then started with',
    );
  return { key: randomBytes(32), generated: true };
}

function describeCounts(counts: RotationCounts): string {
  const items = [
    [counts.variableValues, 'Sensitive variable value'],
    [counts.feeds, 'feed credential'],
    [counts.cloudAccounts, 'cloud account'],
    [counts.releaseSnapshots, 'release snapshot'],
  ] as const;
  return items.map(([n, what]) => `${n} ${what}${n === 1 ? '' : 's'}`).join(', ');
}

const config = configOrExit();
const logger = createLogger(config.logLevel);
const next = newKeyOrExit(config);
const keyInFolder = !config.masterKey;
if (keyInFolder) {
  // loadMasterKey would make a key where there is none: nothing would open with it.
  const file = path.join(config.dataDir, 'master.key');
  const present = await fs.stat(file).then(
    () => true,
    () => false,
  );
  if (!present) refuse(`${file} is not there and GANTRY_MASTER_KEY is unset: there is no key to rotate from`);
}

let database: Awaited<ReturnType<typeof openDatabase>>;
try {
  database = await openDatabase(config, logger);
} catch (error) {
  // The embedded default's database, and its Gantry with it, is running: as with replicas, stop it first.
  if (error instanceof DataFolderInUseError) refuse(error.message, EXIT_REPLICAS_RUNNING);
  logger.fatal({ err: toError(error) }, 'the database did not open');
  refuse(`the database did not open: ${(error as Error).message}`, 1);
}
let status = 0;
try {
  const store = createStore(database.db);
  const current = await installationMasterKey(config, store, logger);
  if (keyInFolder) await writeNextMasterKey(config.dataDir, next.key);
  const outcome = await rotateMasterKey(
    { store, clock: systemClock, secrets: createSecretBox(current.key) },
    { check: masterKeyCheck(current.key), source: current.source },
    { secrets: createSecretBox(next.key), check: masterKeyCheck(next.key) },
    `npm run rotate-master-key (${os.userInfo().username}@${os.hostname()})`,
  );
  if (outcome.outcome === 'rotated') {
    if (keyInFolder) await adoptNextMasterKey(config.dataDir);
    logger.info({ counts: outcome.counts }, 'master key rotated');
    process.stdout.write(
      `Resealed with the new master key: ${describeCounts(outcome.counts)}.\n` +
        (keyInFolder
          ? `${path.join(config.dataDir, 'master.key')} holds the new key${next.generated ? '' : ' (GANTRY_NEW_MASTER_KEY)'}. `
          : 'Start every replica with GANTRY_MASTER_KEY set to the new key. ') +
        'The old key opens only backups taken before now: keep it with them, or destroy both.\n',
    );
  } else {
    if (keyInFolder) await fs.rm(nextMasterKeyFile(config.dataDir), { force: true });
    if (outcome.outcome === 'replicas-running') {
      status = EXIT_REPLICAS_RUNNING;
      notRotated(
        'control planes are running on this database. Stop every one, then run it again.\n' +
          outcome.replicas.map((replica) => `  ${replica}`).join('\n'),
      );
    } else {
      status = EXIT_CONFIGURATION;
      notRotated(outcome.problem);
    }
  }
} catch (error) {
  // master.key.next stays: had the commit gone through unanswered, it is the only copy of the key
  // the values are sealed with. The next start (or run) keeps it or removes it by the recorded check.
  status = error instanceof ConfigurationError ? EXIT_CONFIGURATION : 1;
  logger.error({ err: toError(error) }, 'master key rotation failed');
  notRotated((error as Error).message);
} finally {
  await database.close();
}
process.exit(status);
