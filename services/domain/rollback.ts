/**
 * Rollback (issue #15): redeploy, in one environment, the release that last completed there
 * successfully before the current one — its own immutable snapshot, through the same path as a
 * deploy (permissions, approvals, freezes), marked as a rollback.
 */
import { InvalidParameterError, unknownId, type Principal } from '../core/index.ts';
import type { DomainDeps } from './deps.ts';
import { createDeployments, type FreezeOverride } from './deployment-requests.ts';
import { visibleProject } from './projects.ts';

/** How far back a rollback looks for a release that completed (deployments that started there). */
const HISTORY = 500;

export interface RollbackResult {
  deploymentId: string;
  deploymentIds: string[];
  releaseId: string;
  version: string;
  rolledBackFromReleaseId: string;
  rolledBackFromVersion: string;
  freezeOverride?: FreezeOverride;
}

export async function rollbackRelease(
  deps: DomainDeps,
  principal: Principal,
  input: { projectId: string; environmentName: string; freezeOverrideReason?: string | undefined },
): Promise<RollbackResult> {
  const project = await visibleProject(deps, principal, input.projectId);
  const environment = await deps.store.environments.findByName(project.workspaceId, input.environmentName);
  if (!environment) throw unknownId('environmentName');
  const started = await deps.store.deployments.listStartedInEnvironment(project.id, environment.id, HISTORY);
  // The current release there: that of the last deployment that ran, whatever its outcome.
  const current = started[0];
  if (!current)
    throw new InvalidParameterError(
      `Nothing has been deployed to '${environment.name}' yet: there is nothing to roll back`,
      [{ property: 'environmentName', messages: ['no deployment ran there'] }],
    );
  const target = started.find((d) => d.status === 'Completed' && d.releaseId !== current.releaseId);
  // One after another: inside the request's transaction they share its one connection.
  const currentRelease = await deps.store.releases.get(current.releaseId);
  const targetRelease = target ? await deps.store.releases.get(target.releaseId) : null;
  if (!target || !targetRelease)
    throw new InvalidParameterError(
      `No release completed successfully in '${environment.name}' before ${currentRelease?.version ?? 'the current one'}: there is nothing to roll back to`,
      [{ property: 'environmentName', messages: ['no earlier successful release'] }],
    );
  const fromVersion = currentRelease?.version ?? current.releaseId;
  const { ids, freezeOverride } = await createDeployments(
    deps,
    principal,
    targetRelease,
    { environments: [environment.name], freezeOverrideReason: input.freezeOverrideReason },
    async () => undefined,
    { fromReleaseId: current.releaseId, fromVersion },
  );
  return {
    deploymentId: ids[0]!,
    deploymentIds: ids,
    releaseId: targetRelease.id,
    version: targetRelease.version,
    rolledBackFromReleaseId: current.releaseId,
    rolledBackFromVersion: fromVersion,
    ...(freezeOverride ? { freezeOverride } : {}),
  };
}
