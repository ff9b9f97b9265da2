/**
 * Process configuration (contract §7), parsed once at the edge. Nothing else reads process.env.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

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
   * (GANTRY_GRPC_TLS_CERT_FILE / GANTRY_GRPC_TLS_KEY_FILE); null serves plaintext (loopback, or
   * behind a TLS-terminating proxy). Agents then need GANTRY_AGENT_CA_FILE.
   */
  grpcTls: { certFile: string; keyFile: string } | null;
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

function intVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > 65535) {
    throw new Error(`${name} must be a port number (0-65535), got '${raw}'`);
  }
  return value;
}

function secondsVar(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 86_400) {
    throw new Error(`${name} must be a whole number of seconds from 1 to 86400, got '${raw}'`);
  }
  return value;
}

function optional(env: Env, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

function enrollmentKeyVar(env: Env): string | null {
  const key = optional(env, 'GANTRY_BOOTSTRAP_ENROLLMENT_KEY');
  if (key !== null && !/^[A-Za-z0-9._~+/=-]{32,512}$/.test(key))
    throw new Error('GANTRY_BOOTSTRAP_ENROLLMENT_KEY must be 32 to 512 characters of A-Z a-z 0-9 . _ ~ + / = -');
  return key;
}

export function loadConfig(env: Env = process.env, argv: readonly string[] = []): Config {
  const httpPort = intVar(env, 'GANTRY_PORT', 8080);
  const accountId = optional(env, 'GANTRY_BOOTSTRAP_ACCOUNT_ID');
  const apiKey = optional(env, 'GANTRY_BOOTSTRAP_API_KEY');
  if ((accountId === null) !== (apiKey === null)) {
    throw new Error('Set both GANTRY_BOOTSTRAP_ACCOUNT_ID and GANTRY_BOOTSTRAP_API_KEY, or neither');
  }
  const tlsCert = optional(env, 'GANTRY_GRPC_TLS_CERT_FILE');
  const tlsKey = optional(env, 'GANTRY_GRPC_TLS_KEY_FILE');
  if ((tlsCert === null) !== (tlsKey === null)) {
    throw new Error('Set both GANTRY_GRPC_TLS_CERT_FILE and GANTRY_GRPC_TLS_KEY_FILE (TLS for agents), or neither');
  }
  return {
    httpPort,
    httpHost: env.GANTRY_HOST ?? '0.0.0.0',
    grpcPort: intVar(env, 'GANTRY_GRPC_PORT', 8081),
    grpcTls: tlsCert && tlsKey ? { certFile: path.resolve(tlsCert), keyFile: path.resolve(tlsKey) } : null,
    dataDir: path.resolve(env.GANTRY_DATA_DIR ?? './data'),
    databaseUrl: optional(env, 'DATABASE_URL'),
    embeddedPgPort: intVar(env, 'GANTRY_EMBEDDED_PG_PORT', 0),
    natsUrl: optional(env, 'NATS_URL'),
    natsPrefix: optional(env, 'GANTRY_NATS_PREFIX') ?? 'gantry',
    publicUrl: optional(env, 'GANTRY_PUBLIC_URL') ?? `http://127.0.0.1:${httpPort}`,
    bootstrapAccountId: accountId,
    bootstrapApiKey: apiKey,
    masterKey: optional(env, 'GANTRY_MASTER_KEY'),
    logLevel: env.GANTRY_LOG_LEVEL ?? 'info',
    azureStorageConnectionString: optional(env, 'GANTRY_AZURE_STORAGE_CONNECTION_STRING'),
    azureStorageContainer: env.GANTRY_AZURE_STORAGE_CONTAINER ?? 'gantry-packages',
    agentLostTimeoutSeconds: secondsVar(env, 'GANTRY_AGENT_LOST_TIMEOUT_SECONDS', 120),
    agentBundleDir: path.resolve(optional(env, 'GANTRY_AGENT_BUNDLE_DIR') ?? DEFAULT_AGENT_BUNDLE_DIR),
    bootstrapEnrollmentKey: enrollmentKeyVar(env),
    localAgent:
      argv.includes('--local-agent') || ['1', 'true', 'yes'].includes((env.GANTRY_LOCAL_AGENT ?? '').toLowerCase()),
  };
}
