/** What every command gets: the output, the API (from the global options and environment), the resolver. */
import type { Command } from 'commander';
import { createApi, type Api } from './api.ts';
import { resolveConnection, type Connection, type GlobalOptions } from './config.ts';
import { Output } from './output.ts';
import { Resolver } from './resolve.ts';

export interface CommandContext {
  out: Output;
  api: Api;
  resolver: Resolver;
  connection: Connection;
  options: GlobalOptions;
}

export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

/** The output alone (for errors found before a connection exists). */
export function outputFor(options: Pick<GlobalOptions, 'output'>, io: Io): Output {
  return new Output({ json: options.output === 'json', stdout: io.stdout, stderr: io.stderr, env: io.env });
}

export function contextOf(command: Command, io: Io): CommandContext {
  const options = command.optsWithGlobals<GlobalOptions>();
  const out = outputFor(options, io);
  const connection = resolveConnection(options, io.env);
  const api = createApi(connection, {
    onRetry: (message) => out.warn(message),
    trace: options.verbose ? (line) => out.note(line, 'dim') : undefined,
  });
  return { out, api, resolver: new Resolver(api, options.workspace), connection, options };
}
