/** Composition root of the control plane: `npm start`. Stops cleanly on SIGTERM and SIGINT. */
import { ConfigurationError, EXIT_CONFIGURATION, loadConfig, type Config } from './config.ts';
import { createLogger, toError } from './core/index.ts';
import { startLocalAgent, type LocalAgent } from './local-agent.ts';
import { startServer } from './server.ts';

function configOrExit(): Config {
  try {
    return loadConfig(process.env, process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    // Before the logger exists (its level is one of the values checked): plain text, no stack.
    process.stderr.write(`Gantry did not start: ${error.message}\n`);
    process.exit(EXIT_CONFIGURATION);
  }
}

const config = configOrExit();
const logger = createLogger(config.logLevel);

try {
  const server = await startServer(config, logger);
  let localAgent: LocalAgent | undefined;
  if (config.localAgent) {
    localAgent = await startLocalAgent({
      config,
      deps: server.app.deps,
      grpcPort: server.grpcPort,
      caFingerprint: server.app.deps.agentCaFingerprint ?? null,
      logger,
    });
  }
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    // The agent first: it reports what its scripts did while the control plane still listens.
    await localAgent?.stop();
    await server.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
} catch (error) {
  if (error instanceof ConfigurationError) {
    // Found only once the database answers (the master key's check): refused like the rest.
    logger.fatal({ problems: error.problems }, 'Gantry did not start: invalid configuration');
    process.stderr.write(`Gantry did not start: ${error.message}\n`);
    process.exit(EXIT_CONFIGURATION);
  }
  logger.fatal({ err: toError(error) }, 'Gantry failed to start');
  process.exit(1);
}
