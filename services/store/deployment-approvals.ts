/**
 * Approvals and rejections of deployments (issue #15): one decision per account and deployment,
 * so "distinct accounts" is a unique index, not a count in code.
 */
import type { Page, Paged } from '../core/index.ts';
import type { Db } from './db.ts';
import type { Deployment } from './deployments.ts';

export type ApprovalDecision = 'Approved' | 'Rejected';

export interface DeploymentApproval {
  id: string;
  deploymentId: string;
  workspaceId: string;
  accountId: string;
  accountName: string;
  decision: ApprovalDecision;
  comment: string | null;
  createdUtc: Date;
}

interface ApprovalRow {
  id: string;
  deployment_id: string;
  workspace_id: string;
  account_id: string;
  account_name: string;
  decision: ApprovalDecision;
  comment: string | null;
  created_at: Date;
}

function toApproval(row: ApprovalRow): DeploymentApproval {
  return {
    id: row.id,
    deploymentId: row.deployment_id,
    workspaceId: row.workspace_id,
    accountId: row.account_id,
    accountName: row.account_name,
    decision: row.decision,
    comment: row.comment,
    createdUtc: row.created_at,
  };
}

/** Where a role lets an account approve: its project and environment limits (absent: any). */
export interface ApproverScope {
  projectIds?: readonly string[] | undefined;
  environmentIds?: readonly string[] | undefined;
}

export function deploymentApprovalsStore(db: Db) {
  return {
    /** Records the decision; false when this account already decided on this deployment. */
    async insert(approval: DeploymentApproval): Promise<boolean> {
      const rows = await db('deployment_approvals')
        .insert({
          id: approval.id,
          deployment_id: approval.deploymentId,
          workspace_id: approval.workspaceId,
          account_id: approval.accountId,
          account_name: approval.accountName,
          decision: approval.decision,
          comment: approval.comment,
          created_at: approval.createdUtc,
        })
        .onConflict(['deployment_id', 'account_id'])
        .ignore()
        .returning('id');
      return rows.length > 0;
    },
    async countApproved(deploymentId: string): Promise<number> {
      const [row] = await db('deployment_approvals')
        .where({ deployment_id: deploymentId, decision: 'Approved' })
        .count({ n: '*' });
      return Number(row?.n ?? 0);
    },
    /** Decisions on these deployments, oldest first, in one read. */
    async listFor(deploymentIds: readonly string[]): Promise<DeploymentApproval[]> {
      if (deploymentIds.length === 0) return [];
      return (
        await db<ApprovalRow>('deployment_approvals')
          .whereIn('deployment_id', deploymentIds)
          .orderBy([{ column: 'created_at' }, { column: 'id' }])
      ).map(toApproval);
    },
    /**
     * Deployments of a workspace still waiting for approvals (Queued, not cancelled, fewer
     * approvals than required), oldest first. With `approver`: only those that account may
     * approve — within one of its scopes (null: every project and environment), not requested
     * by it, not already decided by it.
     */
    async listPending(
      workspaceId: string,
      page: Page,
      approver?: { accountId: string; scopes: ApproverScope[] | null },
    ): Promise<Paged<Pick<Deployment, 'id'>>> {
      const approved = db('deployment_approvals as a')
        .whereRaw('a.deployment_id = d.id')
        .where('a.decision', 'Approved')
        .count('*');
      const query = db('deployments as d')
        .where({ 'd.workspace_id': workspaceId, 'd.status': 'Queued' })
        .whereNull('d.cancellation_requested_at')
        .where('d.required_approvals', '>', 0)
        .where('d.required_approvals', '>', approved);
      if (approver) {
        const { accountId, scopes } = approver;
        query
          .where((q) => {
            q.whereNull('d.requested_by_id').orWhereNot('d.requested_by_id', accountId);
          })
          .whereNotExists(
            db('deployment_approvals as own').whereRaw('own.deployment_id = d.id').where('own.account_id', accountId),
          );
        if (scopes !== null)
          query.where((any) => {
            // No scope at all: nothing to list (the false condition keeps the query one shape).
            if (scopes.length === 0) any.whereRaw('false');
            for (const scope of scopes)
              any.orWhere((one) => {
                one.whereRaw('true');
                if (scope.projectIds) one.whereIn('d.project_id', scope.projectIds);
                if (scope.environmentIds) one.whereIn('d.environment_id', scope.environmentIds);
              });
          });
      }
      const [count, rows] = await Promise.all([
        query.clone().count({ n: '*' }),
        query
          .clone()
          .orderBy([{ column: 'd.created_at' }, { column: 'd.id' }])
          .offset(page.skip)
          .limit(page.take)
          .select('d.id'),
      ]);
      return { items: rows as Array<{ id: string }>, totalCount: Number(count[0]?.n ?? 0) };
    },
  };
}
