/**
 * gantry deployment approve ID [--comment T], reject ID --comment T, approvals: the approvals
 * an environment or a lifecycle phase environment asks of deployments (issue #15).
 */
import type { Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { UsageError } from '../exit-codes.ts';
import { renderTable } from '../output.ts';
import { listAll } from '../resolve.ts';

export function registerDeploymentApprovals(deployment: Command, io: Io): void {
  deployment
    .command('approve')
    .description('Approve a deployment that awaits approval (not one the account requested)')
    .argument('<deploymentId>', 'deployment ID')
    .option('--comment <text>', 'why (kept with the approval and in the deployment log)')
    .action(async (deploymentId: string, options: { comment?: string }, command: Command) => {
      const { api, out } = contextOf(command, io);
      const result = unwrap(
        await api.client.POST('/api/deployment/approve', {
          body: { deploymentId, ...(options.comment === undefined ? {} : { comment: options.comment }) },
        }),
      );
      out.result(
        result,
        (v) => `Approved deployment ${v.deploymentId} (${v.approvals} of ${v.requiredApprovals} approvals)\n`,
      );
    });

  deployment
    .command('reject')
    .description('Reject a deployment that awaits approval: it is cancelled, the comment in its log')
    .argument('<deploymentId>', 'deployment ID')
    .requiredOption('--comment <text>', 'why (written to the deployment log)')
    .action(async (deploymentId: string, options: { comment: string }, command: Command) => {
      const { api, out } = contextOf(command, io);
      // A rejection says why: an empty comment is a usage error before asking the server.
      if (options.comment.trim() === '') throw new UsageError('--comment: say why the deployment is rejected');
      const result = unwrap(
        await api.client.POST('/api/deployment/reject', { body: { deploymentId, comment: options.comment } }),
      );
      out.result(result, (v) => `Rejected deployment ${v.deploymentId}: it is cancelled\n`);
    });

  deployment
    .command('approvals')
    .description('List the deployments awaiting approval that this account may approve')
    .action(async (_options: unknown, command: Command) => {
      const { api, out, resolver } = contextOf(command, io);
      const { workspaceId } = await resolver.workspace();
      const approvals = await listAll(async (skip, take) => {
        const page = unwrap(
          await api.client.GET('/api/deployment/approvals', { params: { query: { workspaceId, skip, take } } }),
        );
        return { items: page.approvals, totalCount: page.totalCount };
      });
      const value = {
        workspaceId,
        approvals: approvals.map((a) => ({
          deploymentId: a.deploymentId,
          projectId: a.projectId,
          version: a.version,
          environmentName: a.environmentName,
          requestedBy: a.requestedBy?.name ?? null,
          automatic: a.automatic,
          createdUtc: a.createdUtc,
          approvals: a.approvedBy.length,
          requiredApprovals: a.requiredApprovals,
          approvedBy: a.approvedBy.map((b) => b.name),
          waitingReason: a.waitingReason,
        })),
      };
      out.result(value, (v) =>
        v.approvals.length === 0
          ? 'No deployment awaits your approval\n'
          : renderTable(
              ['DEPLOYMENT', 'VERSION', 'ENVIRONMENT', 'APPROVALS', 'REQUESTED BY', 'CREATED'],
              v.approvals.map((a) => [
                a.deploymentId,
                a.version,
                a.environmentName,
                `${a.approvals} of ${a.requiredApprovals}`,
                a.requestedBy ?? (a.automatic ? '(automatic)' : '-'),
                a.createdUtc,
              ]),
            ),
      );
    });
}
