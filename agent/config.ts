// The agent's configuration, parsed once from the environment at start-up (contract §7).
import { homedir } from 'node:os';
import path from 'node:path';

export interface AgentConfig {
  /** GANTRY_SERVER: control-plane gRPC addresses `host:port`, comma-separated for failover. */
  readonly servers: readonly string[];
  /** GANTRY_AGENT_TOKEN: one-time registration token from POST /api/machine (needed once). */
  readonly registrationToken: string | undefined;
  /** GANTRY_AGENT_ENROLLMENT_KEY: a fleet's reusable enrollment key, instead of a token (needed once). */
  readonly enrollmentKey: string | undefined;
  /** GANTRY_AGENT_NAME: the machine name to enroll under (default: the host name). */
  readonly machineName: string | undefined;
  /** GANTRY_AGENT_HOME: identity, package cache, task journal and work folders. */
  readonly homeDir: string;
  /** GANTRY_AGENT_CA_FILE: PEM CA that signs the control plane's certificate; unset → plaintext. */
  readonly caFile: string | undefined;
  /** GANTRY_AGENT_LOG_LEVEL: pino level (default info). */
  readonly logLevel: string;
  /** GANTRY_AGENT_SHUTDOWN_GRACE_MS: on SIGTERM, scripts get this long after TERM before KILL. */
  readonly shutdownGraceMs: number;
  /** GANTRY_AGENT_RETENTION_DAYS: a finished task's work folder and tombstone, and an unused cached package, are kept this long (default 7). */
  readonly retentionMs: number;
  /**
   * GANTRY_AGENT_MAX_UNPACKED_BYTES: most bytes one package may unpack to; unset → 4 GiB, or 10 ×
   * the package when that is more. Never more than the disk has free.
   */
  readonly maxUnpackedBytes: number | undefined;
}

export class AgentConfigError extends Error {
  readonly code = 'AGENT_CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'AgentConfigError';
  }
}

const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

export function parseAgentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const servers = (env.GANTRY_SERVER ?? '127.0.0.1:8081')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (servers.length === 0)
    throw new AgentConfigError('GANTRY_SERVER is empty: set it to host:port (or several, comma-separated)');
  for (const server of servers) {
    const port = Number(ADDRESS.exec(server)?.[2] ?? NaN);
    if (!(port > 0 && port < 65536))
      throw new AgentConfigError(`GANTRY_SERVER entry "${server}" is not host:port (e.g. gantry.example.com:8081)`);
  }
  const graceText = env.GANTRY_AGENT_SHUTDOWN_GRACE_MS ?? '5000';
  const shutdownGraceMs = Number(graceText);
  if (!Number.isInteger(shutdownGraceMs) || shutdownGraceMs < 0) {
    throw new AgentConfigError(
      `GANTRY_AGENT_SHUTDOWN_GRACE_MS must be a whole number of milliseconds, got "${graceText}"`,
    );
  }
  const retentionText = env.GANTRY_AGENT_RETENTION_DAYS ?? '7';
  const retentionDays = Number(retentionText);
  if (retentionText.trim() === '' || !Number.isFinite(retentionDays) || retentionDays <= 0) {
    throw new AgentConfigError(
      `GANTRY_AGENT_RETENTION_DAYS must be a number of days above 0 (e.g. 7 or 0.5), got "${retentionText}"`,
    );
  }
  const unpackedText = nonEmpty(env.GANTRY_AGENT_MAX_UNPACKED_BYTES);
  const maxUnpackedBytes = unpackedText === undefined ? undefined : Number(unpackedText);
  if (maxUnpackedBytes !== undefined && !(Number.isSafeInteger(maxUnpackedBytes) && maxUnpackedBytes > 0)) {
    throw new AgentConfigError(
      `GANTRY_AGENT_MAX_UNPACKED_BYTES must be a whole number of bytes above 0 (e.g. 8589934592), got "${unpackedText}"`,
    );
  }
  return {
    servers,
    registrationToken: nonEmpty(env.GANTRY_AGENT_TOKEN),
    enrollmentKey: nonEmpty(env.GANTRY_AGENT_ENROLLMENT_KEY),
    machineName: nonEmpty(env.GANTRY_AGENT_NAME),
    homeDir: path.resolve(nonEmpty(env.GANTRY_AGENT_HOME) ?? path.join(homedir(), '.gantry-agent')),
    caFile: nonEmpty(env.GANTRY_AGENT_CA_FILE),
    logLevel: nonEmpty(env.GANTRY_AGENT_LOG_LEVEL) ?? 'info',
    shutdownGraceMs,
    retentionMs: retentionDays * 24 * 3600 * 1000,
    maxUnpackedBytes,
  };
}

/** The environment scripts inherit: the agent's own, minus its GANTRY_* settings (the token!). */
export function scriptBaseEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const base: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && !key.startsWith('GANTRY_')) base[key] = value;
  }
  return base;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
