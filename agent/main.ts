// Agent composition root (`npm run agent`): config → identity → task manager → connection.
// SIGTERM/SIGINT: stop the scripts (TERM, then KILL after the grace period), store their results,
// flush them to the control plane if connected, close the session, exit 0.
import { chmodSync, mkdirSync } from 'node:fs';
import { arch, hostname, platform } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { AgentConfigError, EXIT_CONFIGURATION, parseAgentConfig, scriptBaseEnv } from './config.ts';
import {
  AgentConnection,
  createChannelCredentials,
  DEFAULT_BACKOFF,
  ensureIdentity,
  RegistrationError,
} from './connection/index.ts';
import { PackageCache, TaskJournal, TaskManager } from './steps/index.ts';
import { hostHealth } from './host-facts.ts';
import { AGENT_VERSION } from './version.ts';

async function main(): Promise<void> {
  const config = parseAgentConfig(process.env);
  const logger = pino({
    level: config.logLevel,
    redact: { paths: ['registrationToken', 'credential', '*.credential'], censor: '[redacted]' },
  });
  mkdirSync(config.homeDir, { recursive: true, mode: 0o700 });
  // Also for a home an earlier agent created 0755: nothing in it (identity, journal, packages,
  // work folders) is for other users of the machine.
  chmodSync(config.homeDir, 0o700);

  let connection: AgentConnection | undefined;
  const manager = new TaskManager({
    journal: new TaskJournal(path.join(config.homeDir, 'tasks')),
    packages: new PackageCache(path.join(config.homeDir, 'packages'), {
      download: (packageId, version, signal) => {
        if (!connection) throw new Error('not connected to the control plane');
        return connection.downloadPackage(packageId, version, signal);
      },
    }),
    workRoot: path.join(config.homeDir, 'work'),
    scriptsRoot: path.join(config.homeDir, 'scripts'),
    baseEnv: scriptBaseEnv(process.env),
    logger,
    retentionMs: config.retentionMs,
    maxUnpackedBytes: config.maxUnpackedBytes,
  });
  manager.recover();

  const stopping = new AbortController();
  let stopped: Promise<void> | undefined;
  const stop = (signal: string): void => {
    stopped ??= (async () => {
      logger.info({ signal }, 'stopping');
      stopping.abort();
      await manager.shutdown(config.shutdownGraceMs);
      await connection?.stop();
      logger.info('stopped');
      // A lingering KILL timer or channel must not keep a stopped agent alive.
      process.exit(0);
    })();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  const info = { agentVersion: AGENT_VERSION, os: `${platform()} ${arch()}`, hostname: hostname() };
  const credentials = createChannelCredentials(config.caFile);
  let identity;
  try {
    identity = await ensureIdentity({
      homeDir: config.homeDir,
      registrationToken: config.registrationToken,
      enrollment: config.enrollmentKey ? { key: config.enrollmentKey, machineName: config.machineName } : undefined,
      servers: config.servers,
      credentials,
      info,
      logger,
      backoff: DEFAULT_BACKOFF,
      signal: stopping.signal,
    });
  } catch (error) {
    if (stopping.signal.aborted) return;
    throw error;
  }
  if (stopping.signal.aborted) return;
  connection = new AgentConnection({
    servers: config.servers,
    credentials,
    identity,
    info,
    health: () => hostHealth(config.homeDir, process.env.PATH),
    handler: manager,
    logger,
  });
  manager.attach(connection);
  connection.start();
  logger.info({ machineId: identity.machineId, servers: config.servers, home: config.homeDir }, 'agent started');
}

main().catch((error: unknown) => {
  const known = error instanceof AgentConfigError || error instanceof RegistrationError;
  process.stderr.write(
    `gantry agent: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(error instanceof AgentConfigError ? EXIT_CONFIGURATION : 1);
});
