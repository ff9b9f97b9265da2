/**
 * The gate a deployment passes before it starts (issue #15): the approvals its environment
 * requires, and the freezes over its project and environment. Deploy, promote, rollback,
 * scheduled and automatic deployments all stay Queued here until the engine finds it clear.
 */
import { authorize, Capability, InvalidParameterError, type Principal } from '../core/index.ts';
import type { Deployment, DeploymentFreeze, Environment, Store } from '../store/index.ts';
import { activeFreezes } from './freeze-windows.ts';

export type GateDecision = { clear: true } | { clear: false; reason: string; recheckAt: Date | null };

/** What the gate holds now, in the words `waitingReason` shows. */
export async function checkGate(
  store: Store,
  deployment: Pick<
    Deployment,
    'id' | 'workspaceId' | 'projectId' | 'environmentId' | 'requiredApprovals' | 'freezeOverrideReason'
  >,
  now: Date,
): Promise<GateDecision> {
  const reasons: string[] = [];
  let recheckAt: Date | null = null;
  if (deployment.requiredApprovals > 0) {
    const approved = await store.deploymentApprovals.countApproved(deployment.id);
    if (approved < deployment.requiredApprovals)
      reasons.push(`awaiting approval (${approved} of ${deployment.requiredApprovals})`);
  }
  if (deployment.freezeOverrideReason === null) {
    const frozen = activeFreezes(
      await store.deploymentFreezes.listLive(deployment.workspaceId, now),
      deployment.projectId,
      deployment.environmentId,
      now,
    );
    if (frozen.length > 0) {
      reasons.push(describeFreezes(frozen));
      // Looked at again when the first of them ends (another may still hold then).
      recheckAt = new Date(Math.min(...frozen.map((f) => f.endsAt.getTime())));
    }
  }
  return reasons.length === 0 ? { clear: true } : { clear: false, reason: reasons.join('; '), recheckAt };
}

export function describeFreezes(frozen: ReadonlyArray<{ freeze: DeploymentFreeze; endsAt: Date }>): string {
  return frozen.map((f) => `frozen by '${f.freeze.name}' until ${f.endsAt.toISOString()}`).join('; ');
}

/**
 * The gate columns of new deployments to `environment`: gated when it needs approvals or the
 * workspace has a live freeze. The approvals needed are the higher of the environment's own and
 * those of its phase environment in the release's lifecycle (`phaseApprovals`, see approvalsByPhase).
 */
export function gateOfNew(
  environment: Pick<Environment, 'id' | 'requiredApprovals'>,
  liveFreezes: readonly DeploymentFreeze[],
  phaseApprovals: ReadonlyMap<string, number> = new Map(),
): { gated: boolean; requiredApprovals: number } {
  const requiredApprovals = Math.max(environment.requiredApprovals, phaseApprovals.get(environment.id) ?? 0);
  return { gated: requiredApprovals > 0 || liveFreezes.length > 0, requiredApprovals };
}

/**
 * Approvals required per environment by the phases of the release's lifecycle, read live (like
 * the environment's own setting, a policy set after the release was created still applies); none
 * when the release has no lifecycle or it was deleted since.
 */
export async function approvalsByPhase(
  store: Store,
  release: { snapshot: { lifecycle: { lifecycleId: string } | null } },
): Promise<Map<string, number>> {
  const lifecycle = release.snapshot.lifecycle;
  return lifecycle ? store.lifecycles.phaseApprovals(lifecycle.lifecycleId) : new Map();
}

/**
 * A request that would start now during a freeze is refused naming it (400), unless the caller
 * gives a reason and holds OverrideFreeze for those environments. Returns the freezes overridden.
 */
export function refuseFrozen(
  principal: Principal,
  liveFreezes: readonly DeploymentFreeze[],
  projectId: string,
  targets: ReadonlyArray<Pick<Environment, 'id' | 'name'>>,
  now: Date,
  overrideReason: string | undefined,
): DeploymentFreeze[] {
  const held = targets.flatMap((environment) =>
    activeFreezes(liveFreezes, projectId, environment.id, now).map((f) => ({ ...f, environment })),
  );
  if (held.length === 0) return [];
  if (overrideReason === undefined || overrideReason.trim() === '') {
    throw new InvalidParameterError(
      `Deployments are frozen: ${held.map((h) => `'${h.environment.name}' ${describeFreezes([h])}`).join('; ')}`,
      held.map((h) => ({
        property: 'environments',
        messages: [
          `${h.environment.name}: ${describeFreezes([h])}; an account with OverrideFreeze may deploy giving freezeOverrideReason`,
        ],
      })),
    );
  }
  authorize(principal, Capability.OverrideFreeze, {
    projectId,
    environmentIds: [...new Set(held.map((h) => h.environment.id))],
  });
  return [...new Map(held.map((h) => [h.freeze.id, h.freeze])).values()];
}
