// The agent's configuration, parsed once from the environment at start-up (contract §7).
import { homedir } from 'node:os';
import path from 'node:path';

export interface AgentConfig {
  /** GANTRY_SERVER: control-plane gRPC addresses `host:port`, comma-separated for failover. */
  readonly servers: readonly string[];
  /** GANTRY_AGENT_TOKEN: one-time registration token from POST /api/machine (needed once). */
  readonly registrationToken: string | undefined;
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

export class AgentConfigError extends Error {
  readonly code = 'AGENT_CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'AgentConfigError';
  }
}

const ADDRESS = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

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
    if (!name) throw new AgentConfigError(`Unknown option ${flag} (known: ${Object.keys(names).join(', ')})`);
    if (flag === '--insecure') env[name] = inline ?? '1';
    else if (inline !== undefined) env[name] = inline;
    else if (i + 1 < argv.length) env[name] = argv[++i];
    else throw new AgentConfigError(`${flag} needs a value`);
  }
  return env;
}

const FINGERPRINT = /^[0-9a-f]{64}$/;

/** `AB:CD:…`, `abcd…` or `sha256:abcd…` → `abcd…` (as the control plane's normalizeFingerprint). */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint
    .trim()
    .replace(/^sha-?256:/i, '')
    .replaceAll(':', '')
    .toLowerCase();
}

export function parseAgentConfig(environment: NodeJS.ProcessEnv, argv: readonly string[] = []): AgentConfig {
  const env = { ...environment, ...flagsOf(argv) };
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
  const caFile = nonEmpty(env.GANTRY_AGENT_CA_FILE);
  const fingerprintText = nonEmpty(env.GANTRY_AGENT_CA_FINGERPRINT);
  const caFingerprint = fingerprintText === undefined ? undefined : normalizeFingerprint(fingerprintText);
  if (caFingerprint !== undefined && !FINGERPRINT.test(caFingerprint))
    throw new AgentConfigError(
      `GANTRY_AGENT_CA_FINGERPRINT must be a SHA-256 fingerprint (64 hex digits, colons allowed), got "${fingerprintText}"`,
    );
  const insecureText = (nonEmpty(env.GANTRY_AGENT_INSECURE) ?? '0').toLowerCase();
  if (!['0', 'false', '1', 'true'].includes(insecureText))
    throw new AgentConfigError(`GANTRY_AGENT_INSECURE must be 1 or 0, got "${env.GANTRY_AGENT_INSECURE}"`);
  const insecure = insecureText === '1' || insecureText === 'true';
  if ([caFile, caFingerprint, insecure || undefined].filter((v) => v !== undefined).length > 1)
    throw new AgentConfigError(
      'Set one of GANTRY_AGENT_CA_FINGERPRINT, GANTRY_AGENT_CA_FILE and GANTRY_AGENT_INSECURE=1, not several',
    );
  return {
    servers,
    registrationToken: nonEmpty(env.GANTRY_AGENT_TOKEN),
    homeDir: path.resolve(nonEmpty(env.GANTRY_AGENT_HOME) ?? path.join(homedir(), '.gantry-agent')),
    caFile,
    caFingerprint,
    insecure,
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
