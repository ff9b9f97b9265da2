/** gantry deployment cancel ID: asks the server to cancel (agents stop the scripts: TERM, then KILL). */
import type { Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';

export function registerDeploymentCancel(deployment: Command, io: Io): void {
  deployment
    .command('cancel')
    .description('Cancel a queued or running deployment')
    .argument('<deploymentId>', 'deployment ID')
    .action(async (deploymentId: string, _options: unknown, command: Command) => {
      const { api, out } = contextOf(command, io);
      unwrap(await api.client.POST('/api/deployment/cancel', { body: { deploymentId } }));
      out.result(
        { deploymentId, cancellationRequested: true },
        (v) => `Cancellation requested for deployment ${v.deploymentId}\n`,
      );
    });
}
