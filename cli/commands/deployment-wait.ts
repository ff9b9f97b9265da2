/** gantry deployment wait ID... [--timeout D] [--cancel-on-timeout] [--progress] */
import type { Command } from 'commander';
import { contextOf, type Io } from '../context.ts';
import { addWaitOptions, waitOptionsOf, type WaitFlags } from '../deployment-start.ts';
import { renderDeployments, throwUnlessCompleted, waitForDeployments } from '../wait.ts';

export function registerDeploymentWait(deployment: Command, io: Io): void {
  const command = deployment
    .command('wait')
    .description('Wait until deployments end; the exit code tells how they ended')
    .argument('<deploymentIds...>', 'deployment IDs');
  addWaitOptions(command, false).action(async (ids: string[], options: WaitFlags, cmd: Command) => {
    const { api, out, connection } = contextOf(cmd, io);
    const result = await waitForDeployments(api, out, ids, waitOptionsOf(options, connection.retryBudgetMs));
    out.result(result, (v) => renderDeployments(v.deployments));
    throwUnlessCompleted(result);
  });
}
