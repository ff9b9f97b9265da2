/**
 * gantry deployment logs ID [--follow] [--level Warning|Error]: every line so far (and with
 * --follow, until the deployment ends), or only those at a level and above.
 */
import { Option, type Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { followDeployment } from '../deployment-stream.ts';
import type { DeploymentStatus, LogItem } from '../deployment-types.ts';
import { LogLines } from '../log-lines.ts';

const LEVELS_FROM = {
  Warning: new Set(['Warning', 'Error', 'Critical']),
  Error: new Set(['Error', 'Critical']),
};

export function registerDeploymentLogs(deployment: Command, io: Io): void {
  deployment
    .command('logs')
    .description("Print a deployment's log lines, prefixed by step and machine")
    .argument('<deploymentId>', 'deployment ID')
    .option('-f, --follow', 'keep printing new lines until the deployment ends')
    .addOption(
      new Option('--level <level>', 'only the lines at this level and above (Warning: warnings and errors)').choices(
        Object.keys(LEVELS_FROM),
      ),
    )
    .action(async (deploymentId: string, options: { follow?: boolean; level?: string }, command: Command) => {
      const { api, out, connection } = contextOf(command, io);
      const lines = new LogLines();
      const logs: LogItem[] = [];
      // Without --output json the lines are the result; with it they go to stderr only while following.
      const shown = options.level === undefined ? null : LEVELS_FROM[options.level as keyof typeof LEVELS_FROM];
      const print = (items: LogItem[]) => {
        for (const item of items) {
          // Every line goes through LogLines (its step and machine lines give the prefixes), not only those shown.
          const line = lines.add(item);
          if (shown && !shown.has(item.LogLevel)) continue;
          logs.push(item);
          if (!out.json || options.follow) out.logLine(line.prefix, line.text, line.level);
        }
      };
      let status: DeploymentStatus;
      if (options.follow) {
        status = await followDeployment(api, deploymentId, {
          reconnectBudgetMs: connection.retryBudgetMs,
          onLogs: print,
          onStatus: (s) => {
            status = s;
          },
        });
      } else {
        let after: string | undefined;
        for (;;) {
          const query = after === undefined ? { deploymentId } : { deploymentId, getLogsAfter: after };
          const read = unwrap(await api.client.GET('/api/deployment', { params: { query } }));
          print(read.logs);
          status = read.status;
          // Pages are cut by count or by bytes (about 1 MiB): the log ends at an empty page.
          if (read.logs.length === 0) break;
          after = read.logs.at(-1)!.CreatedUtcTick;
        }
      }
      if (out.json) out.result({ deploymentId, status, logs }, () => '');
      else out.note(`Deployment ${lines.environmentName ?? deploymentId}: ${status.Status}`);
    });
}
