/**
 * Deployment: status and timeline, cancel, the step × machine tree, and the live log. The page's
 * read is one request; the status and the lines then arrive over SSE, which also refreshes the tree.
 */
import { useCallback, useEffect, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, messageOf, unwrap } from '../api/client.ts';
import { useDeploymentEvents, type LevelFloor } from '../api/use-deployment-events.ts';
import { Failure, Loading, Refusal } from '../components/states.tsx';
import { StatusBadge } from '../components/status-badge.tsx';
import { Link, paths } from '../router.tsx';
import { ApprovalPanel } from './approval-panel.tsx';
import { LogView } from './log-view.tsx';
import { StepTree } from './step-tree.tsx';

const FINAL = new Set(['Completed', 'Failed', 'Cancelled']);

export function DeploymentPage({
  deploymentId,
  onWorkspace,
}: {
  deploymentId: string;
  onWorkspace: (id: string) => void;
}) {
  const queryClient = useQueryClient();
  const page = useQuery({
    queryKey: ['deployment-page', deploymentId],
    queryFn: async () => unwrap(await api.GET('/api/dashboard/deployment', { params: { query: { deploymentId } } })),
  });
  // A window of the log from a permalinked line before the part the page holds; null: the tail.
  const [fromTick, setFromTick] = useState<string | null>(null);
  // The level the server filters the stream by (the log view asks when it holds only part of the log).
  const [streamLevel, setStreamLevel] = useState<LevelFloor | null>(null);
  const events = useDeploymentEvents(deploymentId, fromTick, streamLevel);
  const followLatest = useCallback(() => {
    window.history.replaceState(null, '', window.location.pathname + window.location.search);
    setFromTick(null);
  }, []);
  const cancel = useMutation({
    mutationFn: async () => unwrap(await api.POST('/api/deployment/cancel', { body: { deploymentId } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['deployment-page', deploymentId] }),
  });
  // A gate line (issue #15: "Waiting: …", another account's approval) means the page's reason and
  // approvals moved: read the page again (the status stays Queued, so the stream says nothing else).
  // Counted as lines arrive: filtering every line at each render is quadratic in a long log.
  const gateLines = events.gateLines;
  useEffect(() => {
    if (gateLines > 0) void queryClient.invalidateQueries({ queryKey: ['deployment-page', deploymentId] });
  }, [gateLines, deploymentId, queryClient]);
  const workspaceId = page.data?.deployment.workspaceId;
  useEffect(() => {
    if (workspaceId) onWorkspace(workspaceId);
  }, [workspaceId, onWorkspace]);
  if (page.error) return <Failure error={page.error} />;
  if (!page.data) return <Loading what="the deployment" />;
  const { deployment: d, steps } = page.data;
  // The SSE status is the freshest; the page read fills in the rest.
  const status = events.status?.Status ?? d.status;
  const final = FINAL.has(status);
  const timeline = [
    { label: 'Created', at: d.createdUtc },
    { label: 'Started', at: d.startedUtc },
    { label: 'Cancel requested', at: events.status?.CancellationRequestedDate ?? d.cancellationRequestedUtc },
    { label: 'Finished', at: events.status?.CompleteDate ?? d.completedUtc },
  ].filter((e): e is { label: string; at: string } => Boolean(e.at));
  return (
    <section>
      <p className="crumbs">
        <Link to={paths.overview(d.workspaceId)}>Overview</Link> /{' '}
        <Link to={paths.project(d.projectId)}>{d.projectName}</Link> / deployment
      </p>
      <div className="page-head">
        <h1>
          {d.projectName} {d.version} → {d.environmentName}
        </h1>
        <span aria-label="Deployment status">
          <StatusBadge status={status} />
        </span>
        {!final &&
          (page.data.cancel.allowed ? (
            <button
              type="button"
              disabled={cancel.isPending || Boolean(d.cancellationRequestedUtc)}
              onClick={() => cancel.mutate()}
            >
              Cancel deployment
            </button>
          ) : (
            <Refusal reason={`Cancel: ${page.data.cancel.reason}`} />
          ))}
      </div>
      {cancel.error && (
        <p className="error" role="alert">
          {messageOf(cancel.error)}
        </p>
      )}
      <p className="small muted">
        Requested by {d.requestedBy ?? 'the lifecycle (automatic)'} · {events.status?.ErrorCount ?? d.errorCount}{' '}
        error(s), {events.status?.WarningCount ?? d.warningCount} warning(s)
      </p>
      {(status === 'Queued' || status === 'AwaitingSlot') && page.data.waitingReason ? (
        // Issue #15: the reason the server gives (approval, freeze, schedule, queue) and the place in the slot queue.
        <p className="wait" aria-label="Waiting reason">
          Waiting: {page.data.waitingReason}
          {page.data.queuePosition !== null && ` · position ${page.data.queuePosition} in the queue`}
        </p>
      ) : (
        d.waitReason && !final && <p className="wait">{d.waitReason}</p>
      )}
      {page.data.approval && (status === 'Queued' || page.data.approval.approvedBy.length > 0) && (
        <ApprovalPanel deploymentId={deploymentId} approval={page.data.approval} />
      )}
      {d.failureMessage && <p className="error">{d.failureMessage}</p>}
      <ol className="timeline" aria-label="Timeline">
        {timeline.map((e) => (
          <li key={e.label}>
            <strong>{e.label}</strong> <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
          </li>
        ))}
      </ol>
      <StepTree steps={steps} />
      <LogView
        deploymentId={deploymentId}
        log={events}
        live={events.connected && !events.ended}
        streamLevel={streamLevel}
        onStreamLevel={setStreamLevel}
        onOpenFrom={setFromTick}
        onFollowLatest={followLatest}
      />
    </section>
  );
}
