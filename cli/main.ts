/**
 * `gantry`: the command line for pipelines. Registers the commands (one file each under
 * commands/), parses the arguments and turns every outcome into an exit code (exit-codes.ts).
 */
import { Command, CommanderError, Option } from 'commander';
import { GantryApiError } from '../client/index.ts';
import packageJson from '../package.json' with { type: 'json' };
import { registerDeploymentApprovals } from './commands/deployment-approvals.ts';
import { registerDeploymentCancel } from './commands/deployment-cancel.ts';
import { registerDeploymentLogs } from './commands/deployment-logs.ts';
import { registerDeploymentWait } from './commands/deployment-wait.ts';
import { registerMachineAdd } from './commands/machine-add.ts';
import { registerMachineList } from './commands/machine-list.ts';
import { registerMachineUpgrade } from './commands/machine-upgrade.ts';
import { registerPackagePush } from './commands/package-push.ts';
import { registerReleaseCreate } from './commands/release-create.ts';
import { registerReleaseDeploy } from './commands/release-deploy.ts';
import { registerReleasePromote } from './commands/release-promote.ts';
import { registerReleaseRollback } from './commands/release-rollback.ts';
import { registerStatus } from './commands/status.ts';
import { outputFor, type Io } from './context.ts';
import { ExitCode, exitCodeOf, ExitWith } from './exit-codes.ts';

const HELP_FOOTER = `
Server and credentials: --url, --account-id, --api-key, else GANTRY_URL, GANTRY_ACCOUNT_ID,
GANTRY_API_KEY, else the Jaws SDK's JAWS_API_BASE_URL, JAWS_API_LOGIN, JAWS_API_PASSWORD.

Exit codes: 0 success, 1 deployment failed, 2 bad usage or request refused, 3 timed out,
4 cancelled, 5 authentication or permission refused, 6 server unreachable or 5xx.`;

export function buildProgram(io: Io): Command {
  const program = new Command('gantry')
    .description('Gantry from a pipeline: push packages, create releases, deploy and wait with live logs')
    // `--version` belongs to `release create|deploy|promote`; the CLI's own version is -V (and a lone --version).
    .version(packageJson.version, '-V', 'print the gantry CLI version')
    .option('--url <url>', 'server address (GANTRY_URL)')
    .option('--account-id <id>', 'service account ID (GANTRY_ACCOUNT_ID)')
    .option('--api-key <key>', 'API key (GANTRY_API_KEY)')
    .option('--workspace <name|id>', "workspace (default: the account's only workspace)")
    .addOption(new Option('-o, --output <format>', 'result format on stdout').choices(['text', 'json']).default('text'))
    .option('--verbose', 'print each HTTP request on stderr')
    .addHelpText('after', HELP_FOOTER)
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void io.stdout.write(text),
      writeErr: (text) => void io.stderr.write(text),
    });

  const pkg = program.command('package').description('Package store');
  registerPackagePush(pkg, io);
  const release = program.command('release').description('Releases: create, deploy, promote, rollback');
  registerReleaseCreate(release, io);
  registerReleaseDeploy(release, io);
  registerReleasePromote(release, io);
  registerReleaseRollback(release, io);
  const deployment = program.command('deployment').description('Deployments: wait, logs, cancel, approve, reject');
  registerDeploymentWait(deployment, io);
  registerDeploymentLogs(deployment, io);
  registerDeploymentCancel(deployment, io);
  registerDeploymentApprovals(deployment, io);
  registerStatus(program, io);
  const machine = program.command('machine').description('Target machines');
  registerMachineList(machine, io);
  registerMachineAdd(machine, io);
  registerMachineUpgrade(machine, io);
  for (const group of [pkg, release, deployment, machine]) group.exitOverride();
  return program;
}

function wantsJson(args: string[]): boolean {
  return args.some(
    (arg, i) =>
      arg === '--output=json' || arg === '-ojson' || ((arg === '--output' || arg === '-o') && args[i + 1] === 'json'),
  );
}

/** Runs the CLI on `args` (without node and script) and returns the exit code. */
export async function run(args: string[], io: Io): Promise<number> {
  if (args.length === 1 && args[0] === '--version') {
    io.stdout.write(`${packageJson.version}\n`);
    return ExitCode.Success;
  }
  const program = buildProgram(io);
  try {
    await program.parseAsync(args, { from: 'user' });
    return ExitCode.Success;
  } catch (error) {
    // Commander may fail before it has read --output: look for it in the arguments.
    const out = outputFor({ output: wantsJson(args) ? 'json' : 'text' }, io);
    if (error instanceof CommanderError) {
      // Help and version end with 0; every other parse error was already printed by commander.
      if (error.exitCode === 0) return ExitCode.Success;
      if (out.json) out.result({ error: { message: error.message, exitCode: ExitCode.Usage } }, () => '');
      return ExitCode.Usage;
    }
    const code = exitCodeOf(error);
    if (error instanceof ExitWith) return code;
    const message = error instanceof Error ? error.message : String(error);
    const detail =
      error instanceof GantryApiError
        ? ` (HTTP ${error.status}${error.errorcode === null ? '' : `, errorcode ${error.errorcode}`}${error.requestid ? `, request ${error.requestid}` : ''})`
        : '';
    out.error(`Error: ${message}${detail}`);
    if (code === ExitCode.Internal && error instanceof Error && error.stack) out.note(error.stack, 'dim');
    if (out.json) {
      const body = {
        error: {
          message,
          exitCode: code,
          ...(error instanceof GantryApiError
            ? { httpStatus: error.status, errorcode: error.errorcode, requestid: error.requestid }
            : {}),
        },
      };
      out.result(body, () => '');
    }
    return code;
  }
}
