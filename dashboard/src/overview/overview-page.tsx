/**
 * Overview: projects × environments, each cell the latest deployment. One request per view (the
 * aggregate), re-read when the workspace's change feed (SSE) says a deployment moved.
 */
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { useWorkspaceChanges } from '../api/use-workspace-changes.ts';
import { DeploymentCell } from '../components/deployment-cell.tsx';
import { Pager, pageParams } from '../components/pager.tsx';
import { SearchBox } from '../components/search-box.tsx';
import { Failure, Loading } from '../components/states.tsx';
import { Link, paths, useLocation } from '../router.tsx';

const TAKE = 50;

export function OverviewPage({ workspaceId }: { workspaceId: string }) {
  const { skip, search } = pageParams(useLocation());
  useWorkspaceChanges(workspaceId);
  const overview = useQuery({
    queryKey: ['overview', workspaceId, search, skip],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/dashboard/overview', {
          params: { query: { workspaceId, search: search || undefined, skip, take: TAKE } },
        }),
      ),
    // While the next page or filter loads, the current one stays (never another workspace's).
    placeholderData: (previous, query) => (query?.queryKey[1] === workspaceId ? previous : undefined),
  });
  if (overview.error) return <Failure error={overview.error} />;
  if (!overview.data) return <Loading what="the overview" />;
  const { environments, projects, totalCount, workspace } = overview.data;
  return (
    <section>
      <div className="page-head">
        <h1>Overview · {workspace.name}</h1>
        <SearchBox label="Filter projects" value={search} />
      </div>
      {projects.length === 0 ? (
        <p className="muted">{search ? 'No project matches the filter.' : 'No projects in this workspace yet.'}</p>
      ) : (
        <table className="matrix" aria-label="Projects by environment">
          <thead>
            <tr>
              <th scope="col">Project</th>
              {environments.map((e) => (
                <th scope="col" key={e.environmentId}>
                  {e.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {projects.map((project) => (
              <tr key={project.projectId}>
                <th scope="row">
                  <Link to={paths.project(project.projectId)}>{project.name}</Link>
                </th>
                {project.cells.map((cell) => (
                  <td key={cell.environmentId}>
                    <DeploymentCell deployment={cell.deployment} />
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <Pager skip={skip} take={TAKE} totalCount={totalCount} />
    </section>
  );
}
