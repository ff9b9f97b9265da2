// The agent's configuration, parsed once from the environment at start-up (contract §7).
import { homedir } from 'node:os';
import path from 'node:path';
import { AGENT_VARIABLES, readEnvironment } from '../environment/index.ts';

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

/** A refused agent setting (the shared schema's ConfigurationError): main.ts prints it without a stack. */
export { ConfigurationError as AgentConfigError, EXIT_CONFIGURATION } from '../environment/index.ts';

/** Checks every agent variable against the shared schema (environment/), then applies the defaults. */
export function parseAgentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const vars = readEnvironment(env, AGENT_VARIABLES);
  const servers = (vars.GANTRY_SERVER ?? '127.0.0.1:8081')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return {
    servers,
    registrationToken: vars.GANTRY_AGENT_TOKEN?.trim(),
    enrollmentKey: vars.GANTRY_AGENT_ENROLLMENT_KEY?.trim(),
    machineName: vars.GANTRY_AGENT_NAME,
    homeDir: path.resolve(vars.GANTRY_AGENT_HOME?.trim() ?? path.join(homedir(), '.gantry-agent')),
    caFile: vars.GANTRY_AGENT_CA_FILE?.trim(),
    logLevel: vars.GANTRY_AGENT_LOG_LEVEL ?? 'info',
    shutdownGraceMs: vars.GANTRY_AGENT_SHUTDOWN_GRACE_MS ?? 5000,
    retentionMs: (vars.GANTRY_AGENT_RETENTION_DAYS ?? 7) * 24 * 3600 * 1000,
    maxUnpackedBytes: vars.GANTRY_AGENT_MAX_UNPACKED_BYTES,
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
