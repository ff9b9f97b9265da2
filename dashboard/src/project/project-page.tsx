/**
 * Project: releases newest first with their status in every environment; create a release; deploy
 * or promote one, each environment's button disabled with the lifecycle's reason when it is not
 * available, and absent (with why) when the account may not deploy there.
 */
import { useEffect, useState } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, messageOf, unwrap, type Answer } from '../api/client.ts';
import { useWorkspaceChanges } from '../api/use-workspace-changes.ts';
import { DeploymentCell } from '../components/deployment-cell.tsx';
import { Pager, pageParams } from '../components/pager.tsx';
import { SearchBox } from '../components/search-box.tsx';
import { Failure, Loading, Refusal } from '../components/states.tsx';
import { TimeAgo } from '../components/time-ago.tsx';
import { Link, navigate, paths, useLocation } from '../router.tsx';
import { CreateReleaseForm } from './create-release-form.tsx';

const TAKE = 20;
type ProjectView = Answer<'/api/dashboard/project'>;
type ReleaseEnvironment = ProjectView['releases'][number]['environments'][number];

function DeployButton({
  release,
  environment,
  name,
  promote,
}: {
  release: ProjectView['releases'][number];
  environment: ReleaseEnvironment;
  name: string;
  promote: boolean;
}) {
  const queryClient = useQueryClient();
  const deploy = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/api/release/deploy', { body: { releaseId: release.releaseId, environments: [name] } })),
    onSuccess: async (answer) => {
      await queryClient.invalidateQueries({ queryKey: ['project-page'] });
      const first = answer.deploymentIds[0];
      if (first) navigate(paths.deployment(first));
    },
  });
  if (!environment.deploy.allowed) return null;
  const label = `${promote ? 'Promote' : 'Deploy'} ${release.version} to ${name}`;
  return (
    <div className="deploy">
      <button
        type="button"
        disabled={!environment.available || deploy.isPending}
        aria-label={label}
        onClick={() => deploy.mutate()}
      >
        {promote ? 'Promote' : 'Deploy'}
      </button>
      {!environment.available && <Refusal reason={environment.reason} />}
      {deploy.error && (
        <span className="error" role="alert">
          {messageOf(deploy.error)}
        </span>
      )}
    </div>
  );
}

export function ProjectPage({ projectId, onWorkspace }: { projectId: string; onWorkspace: (id: string) => void }) {
  const { skip, search } = pageParams(useLocation());
  const [creating, setCreating] = useState(false);
  const page = useQuery({
    queryKey: ['project-page', projectId, search, skip],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/dashboard/project', {
          params: { query: { projectId, search: search || undefined, skip, take: TAKE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const workspaceId = page.data?.project.workspaceId;
  useWorkspaceChanges(workspaceId ?? null);
  useEffect(() => {
    if (workspaceId) onWorkspace(workspaceId);
  }, [workspaceId, onWorkspace]);
  if (page.error) return <Failure error={page.error} />;
  if (!page.data) return <Loading what="the project" />;
  const { project, environments, releases, totalCount, createRelease } = page.data;
  const canDeployAnywhere = releases.some((r) => r.environments.some((e) => e.deploy.allowed));
  return (
    <section>
      <p className="crumbs">
        <Link to={paths.overview(project.workspaceId)}>Overview</Link> / {project.name}
      </p>
      <div className="page-head">
        <h1>{project.name}</h1>
        <span className="muted">Lifecycle: {project.lifecycleName ?? 'none (every environment)'}</span>
        {createRelease.allowed ? (
          !creating && (
            <button type="button" onClick={() => setCreating(true)}>
              Create release
            </button>
          )
        ) : (
          <Refusal reason={`Create release: ${createRelease.reason}`} />
        )}
      </div>
      {project.description && <p>{project.description}</p>}
      {!canDeployAnywhere && releases.length > 0 && (
        <p className="refusal">Deploying is not offered: your account lacks the Deploy role for this project.</p>
      )}
      {creating && <CreateReleaseForm projectId={projectId} onDone={() => setCreating(false)} />}
      <div className="page-head">
        <h2>Releases</h2>
        <SearchBox label="Filter versions" value={search} />
      </div>
      {releases.length === 0 ? (
        <p className="muted">No releases{search ? ' match the filter' : ' yet'}.</p>
      ) : (
        <table className="matrix" aria-label="Releases by environment">
          <thead>
            <tr>
              <th scope="col">Release</th>
              {environments.map((e) => (
                <th scope="col" key={e.environmentId}>
                  {e.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {releases.map((release) => {
              const deployedSomewhere = release.environments.some((e) => e.deployment !== null);
              return (
                <tr key={release.releaseId}>
                  <th scope="row">
                    <span className="version">{release.version}</span>
                    <span className="small muted">
                      {release.channelName ?? 'no channel'} · <TimeAgo iso={release.createdUtc} />
                    </span>
                    {release.notes && <span className="small notes">{release.notes}</span>}
                  </th>
                  {release.environments.map((e, i) => (
                    <td key={e.environmentId}>
                      <DeploymentCell deployment={e.deployment} showVersion={false} />
                      <DeployButton
                        release={release}
                        environment={e}
                        name={environments[i]?.name ?? ''}
                        promote={deployedSomewhere && e.deployment === null}
                      />
                    </td>
                  ))}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <Pager skip={skip} take={TAKE} totalCount={totalCount} />
    </section>
  );
}
