/**
 * Starts and stops one control-plane process: config → database (embedded or DATABASE_URL) →
 * migrations → store → bootstrap → HTTP API. main.ts calls it; so do tests of the embedded default.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Knex } from 'knex';
import { buildApp } from './api/app.ts';
import type { Config } from './config.ts';
import { createLogger, createSecretBox, loadMasterKey, systemClock, type Logger } from './core/index.ts';
import { bootstrap, type DomainDeps } from './domain/index.ts';
import { createDb, createStore, migrateToLatest, startEmbeddedPostgres, type EmbeddedDatabase } from './store/index.ts';
import { createAzureBlobStore, createFilesystemBlobStore, createPackageService, loadUploadKey, stagingDirOf, type BlobStore } from './packages/index.ts';

export interface RunningServer {
  app: FastifyInstance;
  db: Knex;
  /** The HTTP address the API listens on. */
  url: string;
  stop(): Promise<void>;
}

async function writeGeneratedCredentials(dataDir: string, credentials: { serviceAccountId: string; apiKey: string }): Promise<string> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  const file = path.join(dataDir, 'bootstrap-credentials.json');
  await fs.writeFile(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  return file;
}

export async function startServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({ dataDir: config.dataDir, port: config.embeddedPgPort, logger });
    databaseUrl = embedded.url;
  }
  const db = createDb(databaseUrl);
  try {
    await migrateToLatest(db);
    const deps: DomainDeps = {
      store: createStore(db),
      clock: systemClock,
      secrets: createSecretBox(await loadMasterKey(config)),
    };
    const result = await bootstrap(deps, { accountId: config.bootstrapAccountId, apiKey: config.bootstrapApiKey });
    if (result.generated) {
      const file = await writeGeneratedCredentials(config.dataDir, result.generated);
      // Printed once, on purpose outside the structured log: the key must never be in a log store.
      process.stdout.write(
        `\nGantry created an Admin service account. Save these credentials; they are not shown again.\n` +
          `  service account ID: ${result.generated.serviceAccountId}\n  API key: ${result.generated.apiKey}\n  (also written to ${file}, mode 0600)\n\n`,
      );
    }
    const blobs: BlobStore = config.azureStorageConnectionString
      ? await createAzureBlobStore({ connectionString: config.azureStorageConnectionString, container: config.azureStorageContainer })
      : createFilesystemBlobStore({ root: path.join(config.dataDir, 'packages'), publicUrl: config.publicUrl, hmacKey: await loadUploadKey(config.dataDir) });
    const packages = createPackageService({ deps, db, clock: deps.clock, blobs, stagingDir: stagingDirOf(config.dataDir) });
    const app = await buildApp({ ...deps, packages }, { logger });
    const address = await app.listen({ port: config.httpPort, host: config.httpHost });
    logger.info({ address, embedded: embedded !== null }, 'Gantry control plane listening');
    return {
      app,
      db,
      url: address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '127.0.0.1'),
      async stop() {
        await app.close();
        await db.destroy();
        await embedded?.stop();
      },
    };
  } catch (error) {
    await db.destroy();
    await embedded?.stop();
    throw error;
  }
}
