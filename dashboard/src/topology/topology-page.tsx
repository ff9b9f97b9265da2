/** Topology, read-only: environments, lifecycles and their phases, and one project's steps, rolling groups and variables. */
import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { Failure, Loading } from '../components/states.tsx';
import { setSearchParams, useLocation } from '../router.tsx';

export function TopologyPage({ workspaceId }: { workspaceId: string }) {
  const projectId = useLocation().searchParams.get('project') ?? undefined;
  const topology = useQuery({
    queryKey: ['topology', workspaceId, projectId],
    queryFn: async () =>
      unwrap(await api.GET('/api/dashboard/topology', { params: { query: { workspaceId, projectId } } })),
  });
  if (topology.error) return <Failure error={topology.error} />;
  if (!topology.data) return <Loading what="the topology" />;
  const { environments, lifecycles, projects, project } = topology.data;
  const groupName = new Map(project?.rollingGroups.map((g) => [g.rollingGroupId, g.name]) ?? []);
  const environmentName = new Map(environments.map((e) => [e.environmentId, e.name]));
  return (
    <section className="topology">
      <h1>Topology</h1>
      <h2>Environments</h2>
      <ul className="chips" aria-label="Environments">
        {environments.map((e) => (
          <li key={e.environmentId}>
            {e.name}
            {!e.enabled && ' (disabled)'}
            {e.requiredApprovals > 0 &&
              ` (${e.requiredApprovals} approval${e.requiredApprovals === 1 ? '' : 's'} required)`}
          </li>
        ))}
      </ul>
      <h2>Lifecycles</h2>
      {lifecycles.map((l) => (
        <div key={l.lifecycleId} className="lifecycle">
          <h3>{l.name}</h3>
          <ol className="phases">
            {l.phases.map((p) => (
              <li key={p.name}>
                <strong>{p.name}</strong>{' '}
                <span className="small muted">
                  {p.progressRequirement === 'MinimumNumberToComplete'
                    ? `at least ${p.progressRequirementCount} must complete`
                    : p.progressRequirement}
                </span>
                :{' '}
                {p.environments.map((e) => `${e.environmentName} (${e.howToTrigger})`).join(', ') || 'no environments'}
              </li>
            ))}
          </ol>
        </div>
      ))}
      <h2>Project</h2>
      <label>
        Project
        <select value={projectId ?? ''} onChange={(e) => setSearchParams({ project: e.target.value })}>
          <option value="">Choose a project…</option>
          {projects.map((p) => (
            <option key={p.projectId} value={p.projectId}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      {project && (
        <>
          <h3>Steps</h3>
          <table aria-label="Steps">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Step</th>
                <th scope="col">On error</th>
                <th scope="col">Rolling group</th>
                <th scope="col">Environments</th>
              </tr>
            </thead>
            <tbody>
              {project.steps.map((s) => (
                <tr key={s.projectStepId}>
                  <td>{s.sortOrder}</td>
                  <td>
                    {s.name}
                    {s.disabled && <span className="small muted"> (disabled)</span>}
                  </td>
                  <td>{s.errorAction}</td>
                  <td>{s.rollingGroupId ? (groupName.get(s.rollingGroupId) ?? '') : '—'}</td>
                  <td>{s.environmentIds.map((id) => environmentName.get(id) ?? id).join(', ') || 'all'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h3>Rolling groups</h3>
          {project.rollingGroups.length === 0 ? (
            <p className="muted">None.</p>
          ) : (
            <ul>
              {project.rollingGroups.map((g) => (
                <li key={g.rollingGroupId}>
                  <strong>{g.name}</strong>: window of {g.windowSize}, machines by {g.machineOrder}
                </li>
              ))}
            </ul>
          )}
          <h3>Variables</h3>
          {project.variables.length === 0 && <p className="muted">None.</p>}
          <table aria-label="Variables" hidden={project.variables.length === 0}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Value</th>
                <th scope="col">Scope</th>
              </tr>
            </thead>
            <tbody>
              {project.variables.flatMap((v) =>
                (v.values.length > 0 ? v.values : [{ value: '', scope: '—' }]).map((value, i) => (
                  <tr key={`${v.variableId}-${i}`}>
                    <td>{v.name}</td>
                    <td>{v.variableType}</td>
                    <td>
                      <code>{value.value}</code>
                    </td>
                    <td>{value.scope}</td>
                  </tr>
                )),
              )}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
