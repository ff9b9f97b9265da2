/** One matrix cell: the latest deployment there — version, status, when, by whom, and why it waits. */
import type { Answer } from '../api/client.ts';
import { Link, paths } from '../router.tsx';
import { StatusBadge } from './status-badge.tsx';
import { TimeAgo } from './time-ago.tsx';

export type CellDeployment = NonNullable<
  Answer<'/api/dashboard/overview'>['projects'][number]['cells'][number]['deployment']
>;

export function DeploymentCell({
  deployment,
  showVersion = true,
}: {
  deployment: CellDeployment | null;
  showVersion?: boolean;
}) {
  if (!deployment) return <span className="muted">—</span>;
  return (
    <div className="cell">
      <Link to={paths.deployment(deployment.deploymentId)} className="cell-link">
        {showVersion && <span className="version">{deployment.version}</span>}
        <StatusBadge status={deployment.status} />
      </Link>
      <span className="small muted">
        <TimeAgo iso={deployment.completedUtc ?? deployment.createdUtc} /> · {deployment.requestedBy ?? 'automatic'}
      </span>
      {deployment.waitReason && <span className="wait small">{deployment.waitReason}</span>}
    </div>
  );
}
