/**
 * Process configuration (contract §7), parsed once at the edge. Nothing else reads process.env.
 * The variables and what each accepts are the shared schema in environment/ (also the agent's).
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigurationError, readEnvironment, SERVER_VARIABLES } from '../environment/index.ts';

export { ConfigurationError, EXIT_CONFIGURATION } from '../environment/index.ts';

export const DEFAULT_DB_POOL_MAX = 30;
/**
 * A replica's heartbeat budget: ~135 µs of CPU each on this project's VM (nearly all TLS, HTTP/2
 * and protobuf; bench/README, nineteenth session), so ~5 % of one core. Agents beat every 15 s up
 * to 5,250 on a replica, every 28.6 s at 10,000.
 */
export const DEFAULT_HEARTBEATS_PER_SECOND = 350;
/** Where npm run build:agent (run by npm start when the agent changed) writes the agent. */
const DEFAULT_AGENT_BUNDLE_DIR = fileURLToPath(new URL('../dist/agent/', import.meta.url));

export interface Config {
  /** HTTP API port (GANTRY_PORT). */
  httpPort: number;
  /** Address the HTTP API binds to (GANTRY_HOST). */
  httpHost: string;
  /** gRPC port for agents (GANTRY_GRPC_PORT). */
  grpcPort: number;
  /**
   * PEM certificate chain and private key files the agent gateway serves TLS with
   * (GANTRY_GRPC_TLS_CERT_FILE / GANTRY_GRPC_TLS_KEY_FILE); null serves TLS with the
   * installation's own CA (<dataDir>/agent-ca.pem, created at first start), which agents pin.
   */
  grpcTls: { certFile: string; keyFile: string } | null;
  /**
   * GANTRY_GRPC_INSECURE=1: the agent gateway serves plaintext (behind a TLS-terminating proxy,
   * or on a trusted network), with a warning at every start. Off by default.
   */
  grpcInsecure: boolean;
  /** Data folder: embedded PostgreSQL, master key, packages, bootstrap credentials (GANTRY_DATA_DIR). */
  dataDir: string;
  /** External PostgreSQL (DATABASE_URL); null starts the embedded PostgreSQL 15. */
  databaseUrl: string | null;
  /** Port of the embedded PostgreSQL; 0 picks a free one at start (GANTRY_EMBEDDED_PG_PORT). */
  embeddedPgPort: number;
  /** NATS with JetStream (NATS_URL); null uses the in-process bus. */
  natsUrl: string | null;
  /** Stream and subject prefix on NATS (GANTRY_NATS_PREFIX): installations sharing a NATS server need distinct ones. */
  natsPrefix: string;
  /** Address agents and clients use to reach this server (GANTRY_PUBLIC_URL). */
  publicUrl: string;
  /** Bootstrap Admin credentials (GANTRY_BOOTSTRAP_ACCOUNT_ID / GANTRY_BOOTSTRAP_API_KEY); generated when unset. */
  bootstrapAccountId: string | null;
  bootstrapApiKey: string | null;
  /** Key that encrypts Sensitive values (GANTRY_MASTER_KEY, base64 32 bytes); else <dataDir>/master.key. */
  masterKey: string | null;
  /** pino level (GANTRY_LOG_LEVEL). */
  logLevel: string;
  /** Package blobs in Azure Blob Storage (GANTRY_AZURE_STORAGE_CONNECTION_STRING, with AccountKey); null keeps them under <dataDir>/packages. */
  azureStorageConnectionString: string | null;
  /** Azure container for package blobs (GANTRY_AZURE_STORAGE_CONTAINER). */
  azureStorageContainer: string;
  /**
   * How long a running step waits for its machine's agent to come back before it fails
   * (GANTRY_AGENT_LOST_TIMEOUT_SECONDS, default 120). The deployment's log says at once when a
   * machine goes offline; a late result after the timeout is logged, not applied.
   */
  agentLostTimeoutSeconds: number;
  /**
   * Heartbeats a second this replica takes at most (GANTRY_AGENT_HEARTBEATS_PER_SECOND, default
   * DEFAULT_HEARTBEATS_PER_SECOND): past that many agents ÷ 15 s their heartbeat interval grows,
   * up to 30 s (gateway/heartbeat-pace.ts).
   */
  agentHeartbeatsPerSecond: number;
  /**
   * PostgreSQL connections this replica may hold (GANTRY_DB_POOL_MAX, default DEFAULT_DB_POOL_MAX).
   * Every change request holds one for its transaction, as do the engine's advances: with 10 it
   * was the wait (issue #20's bench/throughput: acquire p90 128 ms, p99 336 ms under 10 deploying
   * clients). Replicas × this must stay below PostgreSQL's max_connections (100 by default).
   */
  dbPoolMax: number;
  /**
   * Days a finished deployment's log is kept (GANTRY_LOG_RETENTION_DAYS); null (unset): forever.
   * Past it, its lines are removed and one line says so; the deployment, its status, counts and
   * tasks stay (engine/log-retention.ts).
   */
  logRetentionDays: number | null;
  /** Port of GET /metrics (GANTRY_METRICS_PORT, default 9464, on GANTRY_HOST); null: not served. Never the API port. */
  metricsPort: number | null;
  /** The built agent (npm run build:agent) that GET /api/agent/install.sh installs (GANTRY_AGENT_BUNDLE_DIR, default dist/agent). */
  agentBundleDir: string;
  /** Also run an agent on this computer in the bootstrap workspace (GANTRY_LOCAL_AGENT=1, or npm start -- --local-agent). */
  localAgent: boolean;
  /**
   * An enrollment key chosen by the operator (GANTRY_BOOTSTRAP_ENROLLMENT_KEY, 32+ characters):
   * created on start in the bootstrap workspace and all its environments, so a compose file's
   * agents enroll themselves with no manual step.
   */
  bootstrapEnrollmentKey: string | null;
}

type Env = Record<string, string | undefined>;

/** Checks every variable against the shared schema (environment/), then applies defaults and the pairing rules. */
export function loadConfig(env: Env = process.env, argv: readonly string[] = []): Config {
  const vars = readEnvironment(env, SERVER_VARIABLES);
  const httpPort = vars.GANTRY_PORT ?? 8080;
  if (
    vars.GANTRY_METRICS_PORT !== undefined &&
    vars.GANTRY_METRICS_PORT !== 0 &&
    vars.GANTRY_METRICS_PORT === httpPort
  ) {
    // Unauthenticated metrics must never be reachable where the API is.
    throw new ConfigurationError([`GANTRY_METRICS_PORT must differ from GANTRY_PORT (${httpPort})`]);
  }
  const accountId = vars.GANTRY_BOOTSTRAP_ACCOUNT_ID ?? null;
  const apiKey = vars.GANTRY_BOOTSTRAP_API_KEY ?? null;
  if ((accountId === null) !== (apiKey === null)) {
    throw new ConfigurationError(['Set both GANTRY_BOOTSTRAP_ACCOUNT_ID and GANTRY_BOOTSTRAP_API_KEY, or neither']);
  }
  const tlsCert = vars.GANTRY_GRPC_TLS_CERT_FILE ?? null;
  const tlsKey = vars.GANTRY_GRPC_TLS_KEY_FILE ?? null;
  if ((tlsCert === null) !== (tlsKey === null)) {
    throw new ConfigurationError([
      'Set both GANTRY_GRPC_TLS_CERT_FILE and GANTRY_GRPC_TLS_KEY_FILE (TLS for agents), or neither',
    ]);
  }
  const grpcInsecure = vars.GANTRY_GRPC_INSECURE === '1' || vars.GANTRY_GRPC_INSECURE === 'true';
  if (grpcInsecure && tlsCert)
    throw new ConfigurationError([
      'GANTRY_GRPC_INSECURE=1 serves plaintext: unset it or GANTRY_GRPC_TLS_CERT_FILE / GANTRY_GRPC_TLS_KEY_FILE',
    ]);
  return {
    httpPort,
    httpHost: vars.GANTRY_HOST ?? '0.0.0.0',
    grpcPort: vars.GANTRY_GRPC_PORT ?? 8081,
    grpcTls: tlsCert && tlsKey ? { certFile: path.resolve(tlsCert), keyFile: path.resolve(tlsKey) } : null,
    grpcInsecure,
    dataDir: path.resolve(vars.GANTRY_DATA_DIR ?? './data'),
    databaseUrl: vars.DATABASE_URL ?? null,
    embeddedPgPort: vars.GANTRY_EMBEDDED_PG_PORT ?? 0,
    natsUrl: vars.NATS_URL ?? null,
    natsPrefix: vars.GANTRY_NATS_PREFIX ?? 'gantry',
    publicUrl: vars.GANTRY_PUBLIC_URL ?? `http://127.0.0.1:${httpPort}`,
    bootstrapAccountId: accountId,
    bootstrapApiKey: apiKey,
    masterKey: vars.GANTRY_MASTER_KEY ?? null,
    logLevel: vars.GANTRY_LOG_LEVEL ?? 'info',
    azureStorageConnectionString: vars.GANTRY_AZURE_STORAGE_CONNECTION_STRING ?? null,
    azureStorageContainer: vars.GANTRY_AZURE_STORAGE_CONTAINER ?? 'gantry-packages',
    agentLostTimeoutSeconds: vars.GANTRY_AGENT_LOST_TIMEOUT_SECONDS ?? 120,
    agentHeartbeatsPerSecond: vars.GANTRY_AGENT_HEARTBEATS_PER_SECOND ?? DEFAULT_HEARTBEATS_PER_SECOND,
    dbPoolMax: vars.GANTRY_DB_POOL_MAX ?? DEFAULT_DB_POOL_MAX,
    logRetentionDays: vars.GANTRY_LOG_RETENTION_DAYS ?? null,
    metricsPort: vars.GANTRY_METRICS_PORT === 'off' ? null : (vars.GANTRY_METRICS_PORT ?? 9464),
    agentBundleDir: path.resolve(vars.GANTRY_AGENT_BUNDLE_DIR ?? DEFAULT_AGENT_BUNDLE_DIR),
    bootstrapEnrollmentKey: vars.GANTRY_BOOTSTRAP_ENROLLMENT_KEY ?? null,
    localAgent: argv.includes('--local-agent') || ['1', 'true', 'yes'].includes(String(vars.GANTRY_LOCAL_AGENT ?? '')),
  };
}
