/**
 * Approvals (issue #15): a deployment to an environment that requires approvals stays Queued
 * until that many distinct accounts with ApproveDeployments approve it; the account that asked
 * for it may not approve it; one rejection cancels it, its comment in the deployment's log.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  type PageRequest,
  type Principal,
} from '../core/index.ts';
import type { ApprovalDecision, ApproverScope, Deployment, DeploymentApproval } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace } from './scope.ts';

export interface DecisionInput {
  deploymentId: string;
  comment?: string | null | undefined;
}

export interface DecisionResult {
  deploymentId: string;
  decision: ApprovalDecision;
  comment: string | null;
  approvals: number;
  requiredApprovals: number;
}

function refuse(message: string): InvalidParameterError {
  return new InvalidParameterError(message, [{ property: 'deploymentId', messages: [message] }]);
}

async function awaitingApproval(deps: DomainDeps, principal: Principal, deploymentId: string) {
  // Locked (inside the request's transaction) before the decision is inserted: its foreign key
  // takes a key-share lock on the deployment, and the log line after it wants the row, which
  // deadlocked with the engine's transactions doing the same the other way round. It also keeps
  // two approvers from counting the same approvals.
  const deployment = await visibleResource(
    deps,
    principal,
    deps.store.deployments.get(deploymentId, { lock: true }),
    'deploymentId',
  );
  authorize(principal, Capability.ApproveDeployments, {
    projectId: deployment.projectId,
    environmentIds: [deployment.environmentId],
  });
  if (deployment.requiredApprovals === 0) throw refuse('The deployment does not require approval');
  if (deployment.status !== 'Queued' || deployment.cancellationRequestedUtc)
    throw refuse(
      `The deployment is ${deployment.cancellationRequestedUtc ? 'being cancelled' : deployment.status}: it no longer awaits approval`,
    );
  const approved = await deps.store.deploymentApprovals.countApproved(deployment.id);
  if (approved >= deployment.requiredApprovals) throw refuse('The deployment already has the approvals it needs');
  return { deployment, approved };
}

async function record(
  deps: DomainDeps,
  principal: Principal,
  deployment: Deployment,
  decision: ApprovalDecision,
  comment: string | null,
): Promise<void> {
  const inserted = await deps.store.deploymentApprovals.insert({
    id: newId(),
    deploymentId: deployment.id,
    workspaceId: deployment.workspaceId,
    accountId: principal.serviceAccountId,
    accountName: principal.name,
    decision,
    comment,
    createdUtc: deps.clock.now(),
  });
  if (!inserted) throw refuse('This account has already approved or rejected the deployment');
}

const commentOf = (input: DecisionInput) => (input.comment?.trim() ? input.comment.trim() : null);

export async function approveDeployment(
  deps: DomainDeps,
  principal: Principal,
  input: DecisionInput,
): Promise<DecisionResult> {
  const { deployment, approved } = await awaitingApproval(deps, principal, input.deploymentId);
  if (deployment.requestedBy?.id === principal.serviceAccountId)
    throw refuse('The account that requested the deployment cannot approve it');
  const comment = commentOf(input);
  await record(deps, principal, deployment, 'Approved', comment);
  const now = deps.clock.now();
  const approvals = approved + 1;
  await deps.store.deploymentLogs.append(
    deployment.id,
    [
      {
        level: 'Information',
        data: `Approved by ${principal.name} (${approvals} of ${deployment.requiredApprovals})${comment ? `: ${comment}` : ''}`,
      },
    ],
    now,
  );
  // The engine looks at its gate again now (it may start, or still wait for more, or a freeze).
  await deps.store.deployments.recheckGates([deployment.id], now);
  await deps.wakeDeployments?.([deployment.id]);
  return {
    deploymentId: deployment.id,
    decision: 'Approved',
    comment,
    approvals,
    requiredApprovals: deployment.requiredApprovals,
  };
}

export async function rejectDeployment(
  deps: DomainDeps,
  principal: Principal,
  input: DecisionInput,
): Promise<DecisionResult> {
  const { deployment, approved } = await awaitingApproval(deps, principal, input.deploymentId);
  const comment = commentOf(input);
  await record(deps, principal, deployment, 'Rejected', comment);
  const now = deps.clock.now();
  await deps.store.deploymentLogs.append(
    deployment.id,
    [{ level: 'Warning', data: `Rejected by ${principal.name}${comment ? `: ${comment}` : ''}` }],
    now,
  );
  await deps.store.deployments.requestCancellation(deployment.id, now);
  await deps.wakeDeployments?.([deployment.id]);
  return {
    deploymentId: deployment.id,
    decision: 'Rejected',
    comment,
    approvals: approved,
    requiredApprovals: deployment.requiredApprovals,
  };
}

export interface PendingApproval {
  deployment: Deployment;
  version: string;
  approvals: DeploymentApproval[];
}

/**
 * Where the principal may approve: null when some role covers every project and environment
 * (Admin, or ApproveDeployments without limits), else the limits of its ApproveDeployments roles.
 */
function approverScopes(principal: Principal): ApproverScope[] | null {
  const roles = principal.roles.filter((r) => r.role === Capability.Admin || r.role === Capability.ApproveDeployments);
  if (roles.some((r) => r.role === Capability.Admin || (!r.projectIds && !r.environmentIds))) return null;
  return roles.map((r) => ({ projectIds: r.projectIds, environmentIds: r.environmentIds }));
}

/**
 * Deployments of a workspace waiting for approvals that the principal may approve (its
 * ApproveDeployments limits; not its own requests; not those it already decided on), oldest
 * first, with the approvals they have. An account that may approve nothing sees an empty list.
 */
export async function listPendingApprovals(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<{ items: PendingApproval[]; totalCount: number }> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, [Capability.View, Capability.ApproveDeployments]);
  const page = await deps.store.deploymentApprovals.listPending(workspace.id, toPage(query), {
    accountId: principal.serviceAccountId,
    scopes: approverScopes(principal),
  });
  const ids = page.items.map((d) => d.id);
  const [deployments, approvals] = await Promise.all([
    Promise.all(ids.map((id) => deps.store.deployments.get(id))),
    deps.store.deploymentApprovals.listFor(ids),
  ]);
  const versions = new Map<string, string>();
  const items: PendingApproval[] = [];
  for (const deployment of deployments) {
    if (!deployment) continue;
    if (!versions.has(deployment.releaseId))
      versions.set(deployment.releaseId, (await deps.store.releases.get(deployment.releaseId))?.version ?? '');
    items.push({
      deployment,
      version: versions.get(deployment.releaseId)!,
      approvals: approvals.filter((a) => a.deploymentId === deployment.id),
    });
  }
  return { items, totalCount: page.totalCount };
}
