/**
 * What `release deploy` and `release promote` share: the target options, one POST
 * /api/release/promote (a release by project and exact version — or the highest — to
 * environments or a phase, in one request), and the optional wait. Environments and phases are
 * sent by name; a value the API refuses as unknown is looked up as an ID and the request sent
 * again with its name.
 */
import { Option, type Command } from 'commander';
import { unwrap } from '../client/index.ts';
import type { CommandContext } from './context.ts';
import { parseDuration } from './duration.ts';
import { UsageError } from './exit-codes.ts';
import { idsToNames, refusedAsUnknown } from './resolve.ts';
import { repeatable } from './repeatable.ts';
import {
  renderDeployments,
  throwUnlessCompleted,
  waitForDeployments,
  type DeploymentResult,
  type WaitOptions,
  type WaitOutcome,
} from './wait.ts';

export interface TargetOptions {
  project: string;
  version?: string;
  env?: string[];
  phase?: string;
  excludeStep?: string[];
  at?: string;
  redownloadPackages?: boolean;
  freezeOverrideReason?: string;
}

export interface WaitFlags {
  wait?: boolean;
  progress?: boolean;
  timeout?: string;
  cancelOnTimeout?: boolean;
}

/** The waiting the flags ask for; a broken event stream is retried as long as reads are. */
export function waitOptionsOf(flags: WaitFlags, reconnectBudgetMs: number): WaitOptions {
  return {
    progress: flags.progress === true,
    timeoutMs: flags.timeout === undefined ? null : parseDuration(flags.timeout, '--timeout'),
    cancelOnTimeout: flags.cancelOnTimeout === true,
    reconnectBudgetMs,
  };
}

/** --wait, --timeout, --cancel-on-timeout, --progress (also used by `deployment wait`). */
export function addWaitOptions(command: Command, withWait: boolean): Command {
  if (withWait) command.option('--wait', 'wait until the deployments end; the exit code tells how they ended');
  return command
    .option('--progress', `stream the deployments' log lines as they arrive${withWait ? ' (implies --wait)' : ''}`)
    .option('--timeout <duration>', 'stop waiting after this long (90, 30s, 10m, 1h30m): exit code 3')
    .option('--cancel-on-timeout', 'cancel the deployments still running when --timeout elapses');
}

export function addTargetOptions(command: Command): Command {
  return command
    .requiredOption('--project <name|id>', 'project')
    .option('--env <name|id>', 'environment (repeatable)', repeatable)
    .addOption(new Option('--phase <name|id>', 'every environment of this lifecycle phase').conflicts('env'))
    .option('--exclude-step <name>', 'skip this step (repeatable)', repeatable)
    .option('--at <iso-8601>', 'schedule the deployments for this time (e.g. 2026-12-01T22:00:00Z)')
    .option('--redownload-packages', 'have agents download packages again even when cached')
    .option(
      '--freeze-override-reason <text>',
      'deploy during a deployment freeze (needs the OverrideFreeze role); the reason is logged',
    );
}

function scheduleOf(at: string | undefined): number | undefined {
  if (at === undefined) return undefined;
  const millis = Date.parse(at);
  if (Number.isNaN(millis) || !/^\d{4}-\d{2}-\d{2}T/.test(at))
    throw new UsageError(`--at '${at}': give an ISO-8601 time such as 2026-12-01T22:00:00Z`);
  return millis;
}

export async function startDeployments(ctx: CommandContext, options: TargetOptions & WaitFlags): Promise<void> {
  const { api, out, resolver, connection } = ctx;
  const env = options.env ?? [];
  const excludeStep = options.excludeStep ?? [];
  if (env.length === 0 && options.phase === undefined) throw new UsageError('Name the target: --env or --phase');
  const waitOptions = waitOptionsOf(options, connection.retryBudgetMs);
  const deploymentDateUnixMillis = scheduleOf(options.at);
  const project = await resolver.project(options.project);

  const promote = (environments: string[], phaseName: string | undefined) =>
    api.client.POST('/api/release/promote', {
      body: {
        projectId: project.projectId,
        ...(options.version === undefined ? {} : { version: options.version }),
        ...(environments.length > 0 ? { environments } : {}),
        ...(phaseName === undefined ? {} : { phaseName }),
        ...(excludeStep.length > 0 ? { excludeStepNames: excludeStep } : {}),
        ...(deploymentDateUnixMillis === undefined ? {} : { deploymentDateUnixMillis }),
        ...(options.redownloadPackages ? { redownloadPackages: true } : {}),
        ...(options.freezeOverrideReason === undefined ? {} : { freezeOverrideReason: options.freezeOverrideReason }),
      },
    });
  const workspaceId = async () => project.workspaceId ?? (await resolver.workspace()).workspaceId;

  let started;
  try {
    started = unwrap(await promote(env, options.phase));
  } catch (error) {
    let retry: Parameters<typeof promote> | null = null;
    if (env.length > 0 && refusedAsUnknown(error, 'environments')) {
      const environments = await resolver.environments(await workspaceId());
      const names = idsToNames(
        env,
        environments,
        (e) => e.environmentId,
        (e) => e.name,
      );
      if (names) retry = [names, undefined];
    } else if (options.phase !== undefined && refusedAsUnknown(error, 'phaseName')) {
      const { lifecycles } = unwrap(
        await api.client.GET('/api/lifecycle', { params: { query: { workspaceId: await workspaceId(), take: 500 } } }),
      );
      const names = idsToNames(
        [options.phase],
        lifecycles.flatMap((l) => l.phases),
        (p) => p.phaseId,
        (p) => p.name,
      );
      if (names) retry = [[], names[0]];
    }
    if (!retry) throw error;
    started = unwrap(await promote(...retry));
  }

  const ids = started.deploymentIds;
  const wait = options.wait === true || options.progress === true;
  let outcome: WaitOutcome | 'Started' = 'Started';
  let deployments: DeploymentResult[] = ids.map((deploymentId) => ({
    deploymentId,
    environmentName: null,
    status: null,
    errorCount: null,
    warningCount: null,
    completedUtc: null,
  }));
  if (wait) {
    out.note(`Started ${ids.length === 1 ? 'deployment' : 'deployments'} ${ids.join(', ')}`);
    const result = await waitForDeployments(api, out, ids, waitOptions);
    outcome = result.outcome;
    deployments = result.deployments;
  }
  const value = { projectId: project.projectId, version: options.version ?? null, outcome, deployments };
  out.result(value, (v) =>
    v.outcome === 'Started'
      ? v.deployments.map((d) => `Started deployment ${d.deploymentId}\n`).join('')
      : renderDeployments(v.deployments),
  );
  if (outcome !== 'Started') throwUnlessCompleted({ outcome, deployments });
}
