/** Fills the pure planner's input from a release snapshot, a deployment request and the machines. */
import type { ReleaseSnapshot } from '../core/index.ts';
import type { Deployment, TargetMachine } from '../store/index.ts';
import { isAgentOnline } from '../domain/index.ts';
import type { PlanInput } from './plan-types.ts';

export function toPlanInput(
  snapshot: ReleaseSnapshot,
  deployment: Deployment,
  machines: TargetMachine[],
  organization: { maxParallelMachines: number },
  now: Date,
): PlanInput {
  return {
    steps: [...snapshot.steps]
      .sort((a, b) => a.sortOrder - b.sortOrder)
      .map((s) => ({
        stepId: s.stepId,
        name: s.name,
        disabled: s.disabled,
        errorAction: s.errorAction,
        parallelMachines: s.parallelMachines,
        environmentIds: s.environmentIds,
        machineIdFilter: s.machineIdFilter,
        machineTagFilter: s.machineTagFilter,
        rollingGroupId: s.rollingGroupId,
      })),
    rollingGroups: snapshot.rollingGroups.map((g) => ({
      rollingGroupId: g.rollingGroupId,
      name: g.name,
      windowSize: g.windowSize,
      machineOrder: g.machineOrder,
      machineOrderTagIds: g.machineOrderTagIds,
      waitBetweenMachineGroups: g.waitBetweenMachineGroups,
      onMachineFailure: g.onMachineFailure,
      onMemberFailure: g.onMemberFailure,
      onNoTargets: g.onNoTargets,
    })),
    machines: machines.map((m) => ({
      machineId: m.machineId,
      name: m.name,
      tagIds: m.tagIds,
      enabled: m.enabled,
      online: isAgentOnline(m, now),
    })),
    request: {
      environmentId: deployment.environmentId,
      excludeStepNames: deployment.excludeStepNames,
      machineMode: deployment.machineMode,
      machineIds: deployment.machineIds,
    },
    organization,
  };
}
