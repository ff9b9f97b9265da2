/**
 * Starts and stops one control-plane process: config → database (embedded or DATABASE_URL) →
 * migrations → store → bootstrap → bus → engine → packages → gateway → HTTP API. main.ts calls
 * it; so do the tests of the embedded default and the end-to-end tests.
 */
import fs from 'node:fs/promises';
import { connect } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { Knex } from 'knex';
import { buildApp } from './api/index.ts';
import { ConfigurationError, type Config } from './config.ts';
import {
  certificateFingerprint,
  createLogger,
  createMetrics,
  createSecretBox,
  loadAgentTls,
  loadMasterKey,
  masterKeyCheck,
  pemCertificates,
  serveMetrics,
  settleRotatedKeyFile,
  systemClock,
  toError,
  type Logger,
  type ReadinessCheck,
} from './core/index.ts';
import {
  bootstrap,
  createReadCaches,
  ensureBootstrapEnrollmentKey,
  masterKeyProblem,
  redeemEnrollmentKey,
  type DomainDeps,
} from './domain/index.ts';
import {
  createDb,
  createStore,
  holdReplicaPresence,
  migrateToLatest,
  migrationStatus,
  pingDatabase,
  startEmbeddedPostgres,
  type EmbeddedDatabase,
  type ReplicaPresence,
  type Store,
} from './store/index.ts';
import type { Bus } from './bus/index.ts';
import { createBus, EventSubject } from './bus/index.ts';
import { createEngine, startLogRetention } from './engine/index.ts';
import { createGateway, heartbeatPaceFor, type PackageSource } from './gateway/index.ts';
import {
  createAzureBlobStore,
  createFilesystemBlobStore,
  createPackageService,
  loadUploadKey,
  stagingDirOf,
  loadAgentDistribution,
  type BlobStore,
} from './packages/index.ts';

/** Where `npm run build:dashboard` (run by `npm start` when needed) puts the dashboard. */
const DASHBOARD_DIR = fileURLToPath(new URL('../dist/dashboard/', import.meta.url));

export interface RunningServer {
  app: FastifyInstance;
  db: Knex;
  /** The HTTP address the API listens on. */
  url: string;
  /** The port agents connect to over gRPC. */
  grpcPort: number;
  /** http://host:port/metrics (Prometheus), or null when GANTRY_METRICS_PORT=off. */
  metricsUrl: string | null;
  stop(): Promise<void>;
}

async function writeGeneratedCredentials(
  dataDir: string,
  credentials: { serviceAccountId: string; apiKey: string },
): Promise<string> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  const file = path.join(dataDir, 'bootstrap-credentials.json');
  await fs.writeFile(file, JSON.stringify(credentials, null, 2) + '\n', { mode: 0o600 });
  return file;
}

/**
 * The agent gateway's certificate chain and key, and the fingerprint agents pin: the operator's
 * files (the fingerprint of the last certificate in the chain file, its root), or the
 * installation's own CA; null with GANTRY_GRPC_INSECURE=1. Read at start, so a wrong path stops it
 * with the reason.
 */
async function loadGrpcTls(config: Config): Promise<{ cert: string; key: string; caFingerprint: string } | null> {
  if (config.grpcInsecure) return null;
  if (!config.grpcTls) {
    const names = ['localhost', '127.0.0.1', '::1', os.hostname(), new URL(config.publicUrl).hostname];
    if (!['0.0.0.0', '::', ''].includes(config.httpHost)) names.push(config.httpHost);
    const own = await loadAgentTls({ dataDir: config.dataDir, names });
    return { cert: own.certChain, key: own.key, caFingerprint: own.caFingerprint };
  }
  const read = async (file: string, variable: string) => {
    try {
      return await fs.readFile(file, 'utf8');
    } catch (error) {
      throw new Error(`${variable} (${file}) could not be read: ${(error as Error).message}`, { cause: error });
    }
  };
  const cert = await read(config.grpcTls.certFile, 'GANTRY_GRPC_TLS_CERT_FILE');
  const root = pemCertificates(cert).at(-1);
  if (!root) throw new Error(`GANTRY_GRPC_TLS_CERT_FILE (${config.grpcTls.certFile}) holds no PEM certificate`);
  return {
    cert,
    key: await read(config.grpcTls.keyFile, 'GANTRY_GRPC_TLS_KEY_FILE'),
    caFingerprint: certificateFingerprint(root),
  };
}

/** Resolves when something accepts TCP connections on host:port (the gateway's socket). */
function acceptsConnections(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** What GET /readyz checks, each named: the failing part is the one an operator must fix. */
function readinessChecks(
  db: Knex,
  bus: Bus,
  gateway: { host: string; port: () => number | null },
  masterKey: { store: Store; check: string },
): ReadinessCheck[] {
  return [
    {
      name: 'postgres',
      probe: async () => {
        await pingDatabase(db);
        return null;
      },
    },
    {
      name: 'migrations',
      probe: async () => {
        const { pending, unknown } = await migrationStatus(db);
        if (pending.length > 0) return `${pending.length} pending (first: ${pending[0]})`;
        if (unknown.length > 0) return `the database has migrations this build does not know: ${unknown.join(', ')}`;
        return null;
      },
    },
    { name: 'bus', probe: async () => (bus.connected() ? null : 'disconnected from NATS') },
    {
      // The key was rotated while this replica ran (its presence lock lost with its connection):
      // what it seals now, the others cannot open.
      name: 'masterKey',
      probe: async () =>
        (await masterKey.store.masterKeyCheck.recorded()) === masterKey.check
          ? null
          : "not the installation's key any more (it was rotated): restart with the new one",
    },
    {
      name: 'gateway',
      probe: async () => {
        const port = gateway.port();
        if (port === null) return 'not started';
        return (await acceptsConnections(gateway.host, port)) ? null : `nothing accepts connections on port ${port}`;
      },
    },
  ];
}

/** The ports this server listens on once started (0 asks the system for one, so none to name). */
export function listenPorts(config: Pick<Config, 'httpPort' | 'grpcPort' | 'metricsPort'>): number[] {
  return [config.httpPort, config.grpcPort, config.metricsPort].filter((port): port is number => !!port);
}

/** The installation's database (embedded, or DATABASE_URL), migrated; closed again on failure. */
export async function openDatabase(
  config: Config,
  logger: Logger,
): Promise<{ db: Knex; url: string; embedded: EmbeddedDatabase | null; close: () => Promise<void> }> {
  let embedded: EmbeddedDatabase | null = null;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    embedded = await startEmbeddedPostgres({
      dataDir: config.dataDir,
      port: config.embeddedPgPort,
      avoidPorts: listenPorts(config),
      logger,
    });
    databaseUrl = embedded.url;
  }
  const db = createDb(databaseUrl, {
    poolMax: config.dbPoolMax,
    log: {
      warn: (message) => logger.warn({ source: 'knex' }, message),
      error: (message) => logger.error({ source: 'knex' }, message),
    },
  });
  const close = async () => {
    await db.destroy();
    await embedded?.stop();
  };
  try {
    await migrateToLatest(db);
  } catch (error) {
    await close();
    throw error;
  }
  return { db, url: databaseUrl, embedded, close };
}

/**
 * The installation's master key, where it comes from (for messages), and a rotation's key file
 * settled first (core/secret-box.ts settleRotatedKeyFile).
 */
export async function installationMasterKey(
  config: Config,
  store: Store,
  logger: Logger,
): Promise<{ key: Buffer; source: string }> {
  if (!config.masterKey) {
    const settled = await settleRotatedKeyFile(config.dataDir, await store.masterKeyCheck.recorded());
    if (settled === 'adopted')
      logger.warn('a master key rotation was interrupted after it committed: its new key file is now master.key');
    if (settled === 'discarded') logger.warn('a master key rotation that did not commit left a key file: removed');
  }
  const key = await loadMasterKey(config);
  const source = config.masterKey
    ? 'GANTRY_MASTER_KEY'
    : `${path.join(config.dataDir, 'master.key')} (GANTRY_MASTER_KEY unset)`;
  // GANTRY_MASTER_KEY was checked with the rest of the configuration; the file is checked here.
  if (key.length !== 32) throw new ConfigurationError([`${source} does not hold base64 of exactly 32 bytes`]);
  return { key, source };
}

export async function startServer(
  config: Config,
  logger: Logger = createLogger(config.logLevel),
): Promise<RunningServer> {
  const { db, url: databaseUrl, embedded, close } = await openDatabase(config, logger);
  let presence: ReplicaPresence | null = null;
  let logRetention: { stop(): Promise<void> } | null = null;
  try {
    // Before the key is checked: a rotation running now ends first, and this start checks the new key.
    presence = await holdReplicaPresence(databaseUrl, logger);
    const store = createStore(db);
    const { key: masterKey, source: keySource } = await installationMasterKey(config, store, logger);
    const deps: DomainDeps = {
      store,
      clock: systemClock,
      secrets: createSecretBox(masterKey),
    };
    const keyProblem = await masterKeyProblem(deps, { check: masterKeyCheck(masterKey), source: keySource });
    if (keyProblem) throw new ConfigurationError([keyProblem]);
    const result = await bootstrap(deps, { accountId: config.bootstrapAccountId, apiKey: config.bootstrapApiKey });
    if (result.generated) {
      const file = await writeGeneratedCredentials(config.dataDir, result.generated);
      // Printed once, on purpose outside the structured log: the key must never be in a log store.
      process.stdout.write(
        `\nGantry created an Admin service account. Save these credentials; they are not shown again.\n` +
          `  service account ID: ${result.generated.serviceAccountId}\n  API key: ${result.generated.apiKey}\n  (also written to ${file}, mode 0600)\n\n`,
      );
    }
    if (config.bootstrapEnrollmentKey) await ensureBootstrapEnrollmentKey(deps, config.bootstrapEnrollmentKey);
    const blobs: BlobStore = config.azureStorageConnectionString
      ? await createAzureBlobStore({
          connectionString: config.azureStorageConnectionString,
          container: config.azureStorageContainer,
        })
      : createFilesystemBlobStore({
          root: path.join(config.dataDir, 'packages'),
          publicUrl: config.publicUrl,
          hmacKey: await loadUploadKey(config.dataDir),
        });
    const packages = createPackageService({
      deps,
      clock: deps.clock,
      blobs,
      stagingDir: stagingDirOf(config.dataDir),
    });

    const metrics = createMetrics({ processMetrics: config.metricsPort !== null });
    const bus = await createBus({ natsUrl: config.natsUrl, prefix: config.natsPrefix, logger, metrics });
    const engine = createEngine({
      store: deps.store,
      clock: deps.clock,
      bus,
      secrets: deps.secrets,
      logger,
      timing: { agentLostMs: config.agentLostTimeoutSeconds * 1000 },
      metrics,
    });
    deps.wakeDeployments = (ids) => engine.wake(ids);
    deps.deploymentChanges = engine.changes;
    // Principals and finished deployments' answers, a few seconds at most (domain/read-caches.ts).
    const readCaches = createReadCaches();
    deps.readCaches = readCaches;
    deps.forgetCachedReads = async () => readCaches.clear();
    engine.changes.subscribeAll((deploymentId) => readCaches.forgetDeployment(deploymentId));
    deps.onReleaseCreated = async (release) => {
      await engine.triggerAutomaticDeployments(release.id, release).catch((error: unknown) => {
        logger.error(
          { err: toError(error), releaseId: release.id },
          'automatic deployments of a new release not created',
        );
      });
    };
    const packageSource: PackageSource = {
      async openPackage(workspaceId, packageId, version) {
        const found = await deps.store.packages.findByPrecedence(workspaceId, packageId, version);
        const stream = found ? await blobs.openRead(found.blobKey) : null;
        return stream ? { stream } : null;
      },
    };
    const grpcTls = await loadGrpcTls(config);
    if (!grpcTls)
      logger.warn(
        'GANTRY_GRPC_INSECURE=1: the agent gateway serves plaintext; registration tokens and agent credentials cross the network in clear',
      );
    const agentDistribution = await loadAgentDistribution(config.agentBundleDir, logger);
    deps.upgradeAgents = async (machineIds) => {
      await bus
        .publishEvent(EventSubject.agentUpgrades, { v: 1, type: 'agents.upgrade', machineIds: [...machineIds] })
        .catch((error: unknown) =>
          logger.warn(
            { err: toError(error) },
            'agent upgrade wake-up not published; agents get it at their next Hello',
          ),
        );
    };
    const gateway = createGateway({
      store: deps.store,
      clock: deps.clock,
      bus,
      agentPort: engine.agentPort,
      packages: packageSource,
      logger,
      heartbeat: heartbeatPaceFor(config.agentLostTimeoutSeconds * 1000, config.agentHeartbeatsPerSecond),
      tls: grpcTls,
      enroll: (key, report) => redeemEnrollmentKey(deps.store, deps.clock, key, report),
      agentBundle: agentDistribution,
    });
    await engine.start();
    if (config.logRetentionDays !== null)
      logRetention = startLogRetention({
        store,
        clock: deps.clock,
        logger,
        days: config.logRetentionDays,
        onRemoved: (deploymentId) => engine.changes.notifyLogs(deploymentId),
      });
    let gatewayPort: number | null = await gateway.start(config.grpcPort, config.httpHost);
    const grpcPort = gatewayPort;
    const agentServer = `${new URL(config.publicUrl).hostname}:${grpcPort}`;
    const probeHost = ['0.0.0.0', '::', ''].includes(config.httpHost) ? '127.0.0.1' : config.httpHost;
    const readiness = readinessChecks(
      db,
      bus,
      { host: probeHost, port: () => gatewayPort },
      { store, check: masterKeyCheck(masterKey) },
    );
    const app = await buildApp(
      {
        ...deps,
        packages,
        agentServer,
        readiness,
        publicUrl: config.publicUrl,
        agentDistribution,
        agentCaFingerprint: grpcTls?.caFingerprint ?? null,
      },
      { logger, dashboardDir: DASHBOARD_DIR, metrics },
    );
    const address = await app.listen({ port: config.httpPort, host: config.httpHost });
    metrics.sources.agentsConnected = () => gateway.connectedMachineIds().length;
    metrics.sources.heartbeatIntervalMs = () => gateway.heartbeatIntervalMs();
    metrics.sources.activeDeployments = () => deps.store.deployments.countActive();
    const metricsServer =
      config.metricsPort === null ? null : await serveMetrics(metrics, config.metricsPort, config.httpHost);
    logger.info(
      {
        address,
        grpcPort,
        metricsPort: metricsServer?.port,
        // What agents pin (GANTRY_AGENT_CA_FINGERPRINT); public, like a certificate.
        caFingerprint: grpcTls?.caFingerprint ?? null,
        embedded: embedded !== null,
        nats: config.natsUrl !== null,
      },
      'Gantry control plane listening',
    );
    return {
      app,
      db,
      url: address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '127.0.0.1'),
      grpcPort,
      metricsUrl: metricsServer ? `http://${probeHost}:${metricsServer.port}/metrics` : null,
      async stop() {
        // Reverse order: stop taking requests and agents first, then the engine, then storage.
        await metricsServer?.close();
        await app.close();
        gatewayPort = null;
        await gateway.stop();
        await engine.stop();
        await logRetention?.stop();
        await bus.close();
        await presence?.stop();
        await close();
      },
    };
  } catch (error) {
    await logRetention?.stop();
    await presence?.stop();
    await close();
    throw error;
  }
}
