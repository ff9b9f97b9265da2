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
  agentChannelCredentials,
  DEFAULT_BACKOFF,
  ensureIdentity,
  PinMismatchError,
  RegistrationError,
  type SessionHandler,
} from './connection/index.ts';
import { AgentUpgrader } from './upgrade/index.ts';
import { PackageCache, TaskJournal, TaskManager } from './steps/index.ts';
import { hostHealth } from './host-facts.ts';
import { AGENT_VERSION } from './version.ts';

async function main(): Promise<void> {
  // The self-test of an upgrade (agent/upgrade) runs the new release this way: it must load and
  // answer without reading any setting.
  if (process.argv[2] === '--version') {
    process.stdout.write(`${AGENT_VERSION}\n`);
    return;
  }
  const config = parseAgentConfig(process.env, process.argv.slice(2));
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
  const stop = (signal: 'SIGTERM' | 'SIGINT' | 'upgrade'): void => {
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
  let identity;
  let credentials: Awaited<ReturnType<typeof agentChannelCredentials>>;
  try {
    // Before registering: the token must only ever go to the pinned control plane.
    credentials = await agentChannelCredentials(config, logger, stopping.signal);
    if (stopping.signal.aborted) return;
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
  const upgrader = new AgentUpgrader({
    currentVersion: AGENT_VERSION,
    scriptPath: process.argv[1],
    node: process.execPath,
    tasks: manager,
    link: () => connection,
    restart: () => stop('upgrade'),
    logger,
    signal: stopping.signal,
  });
  // UpgradeAgent goes to the upgrader; everything else is the task manager's.
  const handler: SessionHandler = {
    hello: () => manager.hello(),
    onWelcome: (settings) => {
      manager.onWelcome(settings);
      upgrader.onWelcome();
    },
    onWritable: () => manager.onWritable(),
    onDisconnected: () => manager.onDisconnected(),
    onMessage: (message) => (message.upgradeAgent ? upgrader.handle(message.upgradeAgent) : manager.onMessage(message)),
  };
  connection = new AgentConnection({
    servers: config.servers,
    credentials,
    identity,
    info,
    health: () => hostHealth(config.homeDir, process.env.PATH),
    handler,
    logger,
  });
  manager.attach(connection);
  connection.start();
  logger.info({ machineId: identity.machineId, servers: config.servers, home: config.homeDir }, 'agent started');
}

main().catch((error: unknown) => {
  const known =
    error instanceof AgentConfigError || error instanceof RegistrationError || error instanceof PinMismatchError;
  process.stderr.write(
    `gantry agent: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(error instanceof AgentConfigError ? EXIT_CONFIGURATION : 1);
});
