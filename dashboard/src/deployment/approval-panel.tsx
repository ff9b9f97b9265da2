/**
 * Approve or reject a deployment that awaits approval (issue #15): the approvals it has and
 * needs, a comment, and the two buttons — disabled with the server's reason when this account
 * may not decide (no ApproveDeployments role here, its own request, already decided).
 */
import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, messageOf, unwrap } from '../api/client.ts';
import { Refusal } from '../components/states.tsx';

export interface Approval {
  requiredApprovals: number;
  approvedBy: string[];
  awaiting: boolean;
  decide: { allowed: boolean; reason: string | null };
}

export function ApprovalPanel({ deploymentId, approval }: { deploymentId: string; approval: Approval }) {
  const queryClient = useQueryClient();
  const [comment, setComment] = useState('');
  const decide = useMutation({
    mutationFn: async (decision: 'approve' | 'reject') => {
      const body = { deploymentId, ...(comment.trim() ? { comment: comment.trim() } : {}) };
      return unwrap(
        decision === 'approve'
          ? await api.POST('/api/deployment/approve', { body })
          : await api.POST('/api/deployment/reject', { body }),
      );
    },
    onSuccess: () => {
      setComment('');
      return queryClient.invalidateQueries({ queryKey: ['deployment-page', deploymentId] });
    },
  });
  const { requiredApprovals, approvedBy, awaiting } = approval;
  return (
    <div className="panel" role="region" aria-label="Approval">
      <h2>
        Approval: {approvedBy.length} of {requiredApprovals}
      </h2>
      {approvedBy.length > 0 && <p className="small muted">Approved by {approvedBy.join(', ')}</p>}
      {awaiting &&
        (approval.decide.allowed ? (
          <>
            <label>
              Comment
              <textarea value={comment} onChange={(e) => setComment(e.target.value)} rows={2} />
            </label>
            <div className="actions">
              <button type="button" disabled={decide.isPending} onClick={() => decide.mutate('approve')}>
                Approve
              </button>
              <button
                type="button"
                // A rejection cancels the deployment; the comment says why in its log.
                disabled={decide.isPending || comment.trim() === ''}
                title={comment.trim() === '' ? 'Say why in the comment to reject' : undefined}
                onClick={() => decide.mutate('reject')}
              >
                Reject
              </button>
            </div>
          </>
        ) : (
          <Refusal reason={`Approve: ${approval.decide.reason}`} />
        ))}
      {decide.error && (
        <p className="error" role="alert">
          {messageOf(decide.error)}
        </p>
      )}
    </div>
  );
}
