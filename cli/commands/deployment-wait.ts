/** gantry deployment wait ID... [--timeout D] [--cancel-on-timeout] [--progress] */
import type { Command } from 'commander';
import { contextOf, type Io } from '../context.ts';
import { addWaitOptions, type WaitFlags } from '../deployment-start.ts';
import { parseDuration } from '../duration.ts';
import { renderTable } from '../output.ts';
import { throwUnlessCompleted, waitForDeployments } from '../wait.ts';

export function registerDeploymentWait(deployment: Command, io: Io): void {
  const command = deployment
    .command('wait')
    .description('Wait until deployments end; the exit code tells how they ended')
    .argument('<deploymentIds...>', 'deployment IDs');
  addWaitOptions(command, false).action(async (ids: string[], options: WaitFlags, cmd: Command) => {
    const { api, out, connection } = contextOf(cmd, io);
    const result = await waitForDeployments(api, out, ids, {
      progress: options.progress === true,
      timeoutMs: options.timeout === undefined ? null : parseDuration(options.timeout, '--timeout'),
      cancelOnTimeout: options.cancelOnTimeout === true,
      reconnectBudgetMs: connection.retryBudgetMs,
    });
    out.result(result, (v) =>
      renderTable(
        ['DEPLOYMENT', 'ENVIRONMENT', 'STATUS', 'ERRORS', 'WARNINGS'],
        v.deployments.map((d) => [
          d.deploymentId,
          d.environmentName ?? '-',
          d.status ?? '-',
          String(d.errorCount ?? '-'),
          String(d.warningCount ?? '-'),
        ]),
      ),
    );
    throwUnlessCompleted(result);
  });
}
