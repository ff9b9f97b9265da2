/**
 * `npm start -- --local-agent` (or GANTRY_LOCAL_AGENT=1): besides the control plane, run an agent
 * on this computer as a child process, enrolled as a machine of the bootstrap workspace in all its
 * environments. Its home is <data>/local-agent, so it keeps its identity across restarts.
 * The agent is the shipped single-file build (npm start builds it when stale).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Config } from './config.ts';
import { toError, type Logger } from './core/index.ts';
import { enrollLocalMachine, type DomainDeps } from './domain/index.ts';

export interface LocalAgent {
  readonly machineId: string;
  stop(): Promise<void>;
}

/**
 * Only the user's ordinary session variables: the control plane's own environment holds secrets
 * (DATABASE_URL, GANTRY_MASTER_KEY, the bootstrap API key) that deployment scripts must never see.
 */
const PASSED_TO_AGENT = ['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

/** How the local agent enrolls and trusts the gateway is decided here, not inherited. */
const SET_HERE = new Set([
  'GANTRY_AGENT_TOKEN',
  'GANTRY_AGENT_ENROLLMENT_KEY',
  'GANTRY_AGENT_CA_FILE',
  'GANTRY_AGENT_CA_FINGERPRINT',
  'GANTRY_AGENT_INSECURE',
]);

function agentBaseEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  const base: Record<string, string> = {};
  for (const key of PASSED_TO_AGENT) if (env[key] !== undefined) base[key] = env[key];
  for (const [key, value] of Object.entries(env))
    if (key.startsWith('GANTRY_AGENT_') && !SET_HERE.has(key) && value !== undefined) base[key] = value;
  return base;
}

/** Stays short and valid as a machine name whatever the host is called. */
export function localMachineName(host = hostname()): string {
  return `local-${host.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 60) || 'machine'}`;
}

export async function startLocalAgent(options: {
  config: Config;
  deps: DomainDeps;
  grpcPort: number;
  /** The gateway's CA fingerprint, which the agent pins; null: the gateway serves plaintext (GANTRY_GRPC_INSECURE=1). */
  caFingerprint: string | null;
  logger: Logger;
}): Promise<LocalAgent> {
  const { config, deps, grpcPort, logger } = options;
  const bundle = path.join(config.agentBundleDir, 'gantry-agent.mjs');
  if (!existsSync(bundle)) throw new Error(`--local-agent: no agent at ${bundle}: run npm run build:agent`);
  const home = path.join(config.dataDir, 'local-agent');
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const name = localMachineName();
  // Enrolled on every start: a fresh token only matters when the agent has no identity yet.
  const enrolled = await enrollLocalMachine(deps, { name });
  const hasIdentity = existsSync(path.join(home, 'identity.json'));
  const child: ChildProcess = spawn(process.execPath, [bundle], {
    env: {
      ...agentBaseEnv(process.env),
      GANTRY_SERVER: `127.0.0.1:${grpcPort}`,
      GANTRY_AGENT_HOME: home,
      GANTRY_AGENT_TOKEN: hasIdentity ? '' : enrolled.registrationToken,
      // Pinned like any agent (any host name: the CA is the installation's own or the operator's).
      ...(options.caFingerprint === null
        ? { GANTRY_AGENT_INSECURE: '1' }
        : { GANTRY_AGENT_CA_FINGERPRINT: options.caFingerprint }),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (!stopping) logger.error({ code, signal }, 'the local agent exited; restart Gantry to start it again');
  });
  child.once('error', (error) => logger.error({ err: toError(error) }, 'the local agent could not start'));
  logger.info({ machineId: enrolled.machineId, name, home }, 'local agent started (--local-agent)');
  return {
    machineId: enrolled.machineId,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
