/**
 * gantry release rollback --project P --env E [--wait …]: redeploys, in one environment, the
 * release that last completed there successfully before the current one (issue #15).
 */
import type { Command } from 'commander';
import { unwrap } from '../../client/index.ts';
import { contextOf, type Io } from '../context.ts';
import { addWaitOptions, waitOptionsOf, type WaitFlags } from '../deployment-start.ts';
import { findByNameOrId } from '../resolve.ts';
import {
  renderDeployments,
  throwUnlessCompleted,
  waitForDeployments,
  type DeploymentResult,
  type WaitOutcome,
} from '../wait.ts';

interface RollbackOptions extends WaitFlags {
  project: string;
  env: string;
  freezeOverrideReason?: string;
}

export function registerReleaseRollback(release: Command, io: Io): void {
  const command = release
    .command('rollback')
    .description('Redeploy the release that last completed in an environment before the current one')
    .requiredOption('--project <name|id>', 'project')
    .requiredOption('--env <name|id>', 'environment')
    .option(
      '--freeze-override-reason <text>',
      'roll back during a deployment freeze (needs the OverrideFreeze role); the reason is logged',
    );
  addWaitOptions(command, true).action(async (options: RollbackOptions, cmd: Command) => {
    const { api, out, resolver, connection } = contextOf(cmd, io);
    const waitOptions = waitOptionsOf(options, connection.retryBudgetMs);
    const project = await resolver.project(options.project);
    // The API takes the environment's name: an ID (or a name in other case) is mapped to it.
    const workspaceId = project.workspaceId ?? (await resolver.workspace()).workspaceId;
    const { found } = findByNameOrId(
      await resolver.environments(workspaceId),
      options.env,
      (e) => e.environmentId,
      (e) => e.name,
    );
    const started = unwrap(
      await api.client.POST('/api/release/rollback', {
        body: {
          projectId: project.projectId,
          environmentName: found?.name ?? options.env,
          ...(options.freezeOverrideReason === undefined ? {} : { freezeOverrideReason: options.freezeOverrideReason }),
        },
      }),
    );
    let outcome: WaitOutcome | 'Started' = 'Started';
    let deployments: DeploymentResult[] = started.deploymentIds.map((deploymentId) => ({
      deploymentId,
      environmentName: null,
      status: null,
      errorCount: null,
      warningCount: null,
      completedUtc: null,
    }));
    out.note(
      `Rolling back from ${started.rolledBackFromVersion} to ${started.version}: deployment ${started.deploymentId}`,
    );
    if (options.wait === true || options.progress === true) {
      const result = await waitForDeployments(api, out, started.deploymentIds, waitOptions);
      outcome = result.outcome;
      deployments = result.deployments;
    }
    const value = {
      projectId: project.projectId,
      version: started.version,
      rolledBackFromVersion: started.rolledBackFromVersion,
      outcome,
      deployments,
    };
    out.result(value, (v) =>
      v.outcome === 'Started'
        ? v.deployments.map((d) => `Started deployment ${d.deploymentId} (rollback to ${v.version})\n`).join('')
        : renderDeployments(v.deployments),
    );
    if (outcome !== 'Started') throwUnlessCompleted({ outcome, deployments });
  });
}
