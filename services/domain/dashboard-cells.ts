/**
 * What a dashboard cell says about a deployment that has not started: why it waits. Honest and
 * specific ("Waiting for 1.4.0 to finish in Production"), the thing peers' dashboards leave out.
 */
import { isFinalStatus } from '../core/index.ts';
import type { CellDeployment } from '../store/index.ts';

export interface WaitContext {
  now: Date;
  /** The running deployment of the same project and environment, if any. */
  runningInCell: { deploymentId: string; version: string } | null;
  organization: { running: number; maxConcurrent: number };
  environmentName: string;
}

export function waitReason(
  d: Pick<CellDeployment, 'status' | 'scheduledFor' | 'cancellationRequestedUtc' | 'waitingReason'>,
  context: WaitContext,
): string | null {
  if (d.cancellationRequestedUtc && !isFinalStatus(d.status)) return 'Cancelling: waiting for the agents to stop';
  switch (d.status) {
    case 'Queued':
      if (d.scheduledFor && d.scheduledFor > context.now) return `Scheduled for ${d.scheduledFor.toISOString()}`;
      // Held at its gate: "awaiting approval (0 of 1)", a freeze — as the CLI and the deployment page say.
      if (d.waitingReason) return `Waiting: ${d.waitingReason}`;
      return 'Queued: waiting for a control plane to validate it';
    case 'Validating':
      return 'Resolving machines, packages and variables';
    case 'AwaitingSlot':
      if (context.runningInCell)
        return `Waiting for ${context.runningInCell.version} to finish in ${context.environmentName} (one deployment per project and environment at a time)`;
      if (context.organization.running >= context.organization.maxConcurrent)
        return `Waiting for a slot: ${context.organization.running} of the organization's ${context.organization.maxConcurrent} concurrent deployments are running`;
      return 'Waiting for a free slot';
    case 'Running':
    case 'Completed':
    case 'Failed':
    case 'Cancelled':
      return null;
  }
}

/** The cells of a page whose wait reason needs the running deployment of their cell. */
export function awaitingCells(cells: readonly CellDeployment[], projectIdOf: (cell: CellDeployment) => string) {
  return cells
    .filter((c) => c.status === 'AwaitingSlot')
    .map((c) => ({ projectId: projectIdOf(c), environmentId: c.environmentId }));
}
