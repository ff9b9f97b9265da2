/**
 * Builders of the planner's input (PlanInput), without the test runner: the planner and
 * scheduler tests use them (through test/services/engine/plan-fixtures.ts), and so does
 * bench/fleet/scheduler.ts.
 */
import { DEFAULT_GROUP_SETTINGS } from '../../services/domain/rolling-group-rules.ts';
import { planDeployment } from '../../services/engine/planner.ts';
import type {
  Plan,
  PlanInput,
  PlanMachineInput,
  PlanRollingGroupInput,
  PlanStepInput,
} from '../../services/engine/plan-types.ts';

export function step(stepId: string, overrides: Partial<PlanStepInput> = {}): PlanStepInput {
  return {
    stepId,
    name: stepId,
    disabled: false,
    errorAction: 'Stop',
    parallelMachines: null,
    environmentIds: [],
    machineIdFilter: [],
    machineTagFilter: [],
    rollingGroupId: null,
    ...overrides,
  };
}

export function group(rollingGroupId: string, overrides: Partial<PlanRollingGroupInput> = {}): PlanRollingGroupInput {
  // The spec's defaults, as a group created without settings gets them.
  return { rollingGroupId, name: rollingGroupId, ...DEFAULT_GROUP_SETTINGS, machineOrderTagIds: [], ...overrides };
}

/** A machine whose ID is its name lower-cased, unless overridden. */
export function machine(
  name: string,
  tagIds: string[] = [],
  overrides: Partial<PlanMachineInput> = {},
): PlanMachineInput {
  return { machineId: name.toLowerCase(), name, tagIds, enabled: true, online: true, ...overrides };
}

export function input(
  parts: Partial<Omit<PlanInput, 'request'>> & { request?: Partial<PlanInput['request']> },
): PlanInput {
  return {
    steps: parts.steps ?? [],
    rollingGroups: parts.rollingGroups ?? [],
    machines: parts.machines ?? [],
    request: { environmentId: 'env-prod', excludeStepNames: [], machineMode: 'All', machineIds: [], ...parts.request },
    organization: parts.organization ?? { maxParallelMachines: 8 },
  };
}

export function plan(parts: Parameters<typeof input>[0]): Plan {
  return planDeployment(input(parts));
}
