/** gantry status [--project P]: what is deployed where — project × environment → version, status, when. */
import type { Command } from 'commander';
import { unwrap, type paths } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { listAll } from '../resolve.ts';
import { renderTable } from '../output.ts';

type ListedDeployment =
  paths['/api/deployment/list']['get']['responses'][200]['content']['application/json']['deployments'][number];

/** One project × environment as the JSON output shows it (cli/README.md). */
export interface StatusRow {
  projectId: string;
  projectName: string;
  environmentId: string;
  environmentName: string;
  version: string;
  status: string;
  deploymentId: string;
  createdUtc: string;
  completedUtc: string | null;
}

export function ago(iso: string, now = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (seconds < 60) return `${seconds}s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86_400)}d ago`;
}

export function registerStatus(program: Command, io: Io): void {
  program
    .command('status')
    .description('What is deployed where: the latest deployment of each project × environment')
    .option('--project <name|id>', 'only this project')
    .action(async (options: { project?: string }, command: Command) => {
      const { api, out, resolver } = contextOf(command, io);
      const client = api.client;
      const project = options.project === undefined ? null : await resolver.project(options.project);
      const workspaceId = project?.workspaceId ?? (await resolver.workspace()).workspaceId;
      const [projects, environments] = await Promise.all([
        listAll(async (skip, take) => {
          const page = unwrap(await client.GET('/api/project', { params: { query: { workspaceId, skip, take } } }));
          return { items: page.projects, totalCount: page.totalCount };
        }),
        resolver.environments(workspaceId),
      ]);
      const query = project ? { projectId: project.projectId } : { workspaceId };
      // Newest first, so the first deployment seen of a pair is its latest.
      const latest = new Map<string, ListedDeployment>();
      await listAll(
        async (skip, take) => {
          const page = unwrap(
            await client.GET('/api/deployment/list', { params: { query: { ...query, skip, take } } }),
          );
          for (const d of page.deployments) {
            const key = `${d.projectId}\u0000${d.environmentId}`;
            if (!latest.has(key)) latest.set(key, d);
          }
          return { items: page.deployments, totalCount: page.totalCount };
        },
        // Once every project × environment has its latest, older pages cannot change the answer.
        () => latest.size >= (project ? 1 : projects.length) * environments.length,
      );
      const projectName = new Map(projects.map((p) => [p.projectId, p.name]));
      const order = new Map(environments.map((e, i) => [e.environmentId, i]));
      const rows: StatusRow[] = [...latest.values()]
        .map((d) => ({
          projectId: d.projectId,
          projectName: projectName.get(d.projectId) ?? project?.name ?? d.projectId,
          environmentId: d.environmentId,
          environmentName: d.environmentName,
          version: d.version,
          status: d.status,
          deploymentId: d.deploymentId,
          createdUtc: d.createdUtc,
          completedUtc: d.completedUtc,
        }))
        .sort(
          (a, b) =>
            a.projectName.localeCompare(b.projectName) ||
            (order.get(a.environmentId) ?? 1e9) - (order.get(b.environmentId) ?? 1e9),
        );
      out.result({ workspaceId, deployments: rows }, (v, paint) =>
        v.deployments.length === 0
          ? 'Nothing deployed yet\n'
          : renderTable(
              ['PROJECT', 'ENVIRONMENT', 'VERSION', 'STATUS', 'WHEN'],
              v.deployments.map((r) => [
                r.projectName,
                r.environmentName,
                r.version,
                r.status === 'Failed' ? paint('red', r.status) : r.status,
                ago(r.completedUtc ?? r.createdUtc),
              ]),
            ),
      );
    });
}
