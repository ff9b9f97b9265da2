// The agent's configuration, parsed once from the environment at start-up (contract §7).
import { homedir } from 'node:os';
import path from 'node:path';
import {
  AGENT_VARIABLES,
  ConfigurationError as AgentConfigError,
  normalizeFingerprint,
  readEnvironment,
} from '../environment/index.ts';

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
  /**
   * GANTRY_AGENT_CA_FILE (or --ca-file): PEM CA that signs the control plane's certificate (its
   * host name is checked too). With neither this nor a fingerprint, the system's CAs are trusted.
   */
  readonly caFile: string | undefined;
  /**
   * GANTRY_AGENT_CA_FINGERPRINT (or --ca-fingerprint): SHA-256 fingerprint of the control plane's
   * CA, from the registration token's answer. The agent learns that CA from the server once, keeps
   * it in its home and trusts no other certificate (any host name: the CA is the installation's own).
   */
  readonly caFingerprint: string | undefined;
  /** GANTRY_AGENT_INSECURE=1 (or --insecure): plaintext, for a gateway started with GANTRY_GRPC_INSECURE=1. */
  readonly insecure: boolean;
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
export {
  ConfigurationError as AgentConfigError,
  EXIT_CONFIGURATION,
  normalizeFingerprint,
} from '../environment/index.ts';

/** `--ca-file X`, `--ca-fingerprint=X`, `--insecure`: the same settings as their variables, which they override. */
function flagsOf(argv: readonly string[]): NodeJS.ProcessEnv {
  const names: Record<string, string> = {
    '--ca-file': 'GANTRY_AGENT_CA_FILE',
    '--ca-fingerprint': 'GANTRY_AGENT_CA_FINGERPRINT',
    '--insecure': 'GANTRY_AGENT_INSECURE',
  };
  const env: NodeJS.ProcessEnv = {};
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    const name = names[flag];
    if (!name) throw new AgentConfigError([`Unknown option ${flag} (known: ${Object.keys(names).join(', ')})`]);
    if (flag === '--insecure') env[name] = inline ?? '1';
    else if (inline !== undefined) env[name] = inline;
    else if (i + 1 < argv.length) env[name] = argv[++i];
    else throw new AgentConfigError([`${flag} needs a value`]);
  }
  return env;
}

/** Checks every agent variable (and flag) against the shared schema (environment/), then applies the defaults. */
export function parseAgentConfig(environment: NodeJS.ProcessEnv, argv: readonly string[] = []): AgentConfig {
  const vars = readEnvironment({ ...environment, ...flagsOf(argv) }, AGENT_VARIABLES);
  const servers = (vars.GANTRY_SERVER ?? '127.0.0.1:8081')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const caFile = vars.GANTRY_AGENT_CA_FILE?.trim();
  const caFingerprint =
    vars.GANTRY_AGENT_CA_FINGERPRINT === undefined ? undefined : normalizeFingerprint(vars.GANTRY_AGENT_CA_FINGERPRINT);
  const insecure = vars.GANTRY_AGENT_INSECURE === '1' || vars.GANTRY_AGENT_INSECURE === 'true';
  if ([caFile, caFingerprint, insecure || undefined].filter((v) => v !== undefined).length > 1)
    throw new AgentConfigError([
      'Set one of GANTRY_AGENT_CA_FINGERPRINT, GANTRY_AGENT_CA_FILE and GANTRY_AGENT_INSECURE=1, not several',
    ]);
  return {
    servers,
    registrationToken: vars.GANTRY_AGENT_TOKEN?.trim(),
    enrollmentKey: vars.GANTRY_AGENT_ENROLLMENT_KEY?.trim(),
    machineName: vars.GANTRY_AGENT_NAME,
    homeDir: path.resolve(vars.GANTRY_AGENT_HOME?.trim() ?? path.join(homedir(), '.gantry-agent')),
    caFile,
    caFingerprint,
    insecure,
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
