/**
 * Types of the pure deployment planner (planner.ts) and scheduling policy (scheduler.ts).
 *
 * Glossary:
 * - stage: one unit the deployment runs in order — a plain step, or a rolling group (a run of
 *   consecutive steps that one machine completes before the next machine starts any of them).
 * - target: one (step, machine) pair; its status is what the orchestrator stores and reports in
 *   GET /api/deployment/targets.
 * - rank: a machine's position class inside a rolling group (TagPriority order); ranks run in order.
 *
 * The orchestrator fills PlanInput from the release snapshot and the topology; nothing here does I/O.
 * The values steps and groups take (error actions, machine order …) are core's vocabulary.
 */
import type {
  ErrorAction,
  MachineMode,
  MachineOrder,
  OnMachineFailure,
  OnMemberFailure,
  OnNoTargets,
  TaskStatus,
} from '../core/index.ts';

// ---------------------------------------------------------------------------------------------
// Input

export interface PlanStepInput {
  stepId: string;
  name: string;
  disabled: boolean;
  errorAction: ErrorAction;
  /** null: the organization's maxParallelMachines. */
  parallelMachines: number | null;
  /** Empty = every environment. */
  environmentIds: string[];
  /** Empty = every machine. */
  machineIdFilter: string[];
  /** Empty = every machine; else the machine must carry every tag of at least one set. */
  machineTagFilter: { tagIds: string[] }[];
  rollingGroupId: string | null;
}

export interface PlanRollingGroupInput {
  rollingGroupId: string;
  name: string;
  windowSize: number;
  machineOrder: MachineOrder;
  machineOrderTagIds: string[];
  waitBetweenMachineGroups: boolean;
  onMachineFailure: OnMachineFailure;
  onMemberFailure: OnMemberFailure;
  onNoTargets: OnNoTargets;
}

/** A machine attached to the deployment's environment. */
export interface PlanMachineInput {
  machineId: string;
  name: string;
  tagIds: string[];
  enabled: boolean;
  online: boolean;
}

export interface PlanRequestInput {
  environmentId: string;
  /** Matched case-insensitively (step names are unique case-insensitively). */
  excludeStepNames: string[];
  machineMode: MachineMode;
  machineIds: string[];
}

export interface PlanInput {
  /** In project step order. */
  steps: PlanStepInput[];
  rollingGroups: PlanRollingGroupInput[];
  machines: PlanMachineInput[];
  request: PlanRequestInput;
  organization: { maxParallelMachines: number };
}

// ---------------------------------------------------------------------------------------------
// Plan

/** Why a whole step does not run. Only NoMatchingMachine is a warning; the others are expected. */
export const StepSkipReason = {
  Disabled: 'Disabled',
  Excluded: 'Excluded',
  EnvironmentNotInScope: 'EnvironmentNotInScope',
  NoMatchingMachine: 'NoMatchingMachine',
} as const;
export type StepSkipReason = (typeof StepSkipReason)[keyof typeof StepSkipReason];

export interface StepSkip {
  reason: StepSkipReason;
  level: 'Information' | 'Warning';
  message: string;
}

export interface PlannedMachine {
  machineId: string;
  machineName: string;
  /** As seen when planning: the orchestrator fails an offline machine's part at once. */
  online: boolean;
}

export interface StepStage {
  kind: 'Step';
  stepId: string;
  name: string;
  errorAction: ErrorAction;
  /** Ordered by machine name, case-insensitively. Empty when skipped. */
  targets: PlannedMachine[];
  parallelism: number;
  skip: StepSkip | null;
}

export interface RollingMember {
  stepId: string;
  name: string;
  errorAction: ErrorAction;
  /** Non-null: the member does not run at all (disabled, excluded, out of environment scope). */
  skip: StepSkip | null;
}

export interface RollingMachine extends PlannedMachine {
  rank: number;
  /** Running members that apply to this machine, in step order; never empty. */
  stepIds: string[];
  /** Running members whose filters exclude this machine (skipped on this machine only). */
  notApplicableStepIds: string[];
}

export interface RollingStage {
  kind: 'RollingGroup';
  rollingGroupId: string;
  name: string;
  members: RollingMember[];
  /** In run order: rank, then name case-insensitively. */
  machines: RollingMachine[];
  windowSize: number;
  waitBetweenMachineGroups: boolean;
  onMachineFailure: OnMachineFailure;
  onMemberFailure: OnMemberFailure;
  /** Set when some member runs but no machine matches any of them. */
  noTargets: OnNoTargets | null;
}

export type Stage = StepStage | RollingStage;

export interface Plan {
  environmentId: string;
  stages: Stage[];
}

// ---------------------------------------------------------------------------------------------
// Scheduling

/** Current status of every target, keyed by targetKey(stepId, machineId); missing = Pending. */
export type TargetStatuses = ReadonlyMap<string, TaskStatus>;

export function targetKey(stepId: string, machineId: string): string {
  return `${stepId}\u0000${machineId}`;
}

export const TargetSkipReason = {
  /** onMemberFailure SkipRestOnThisMachine after an earlier member failed on the machine. */
  EarlierMemberFailed: 'EarlierMemberFailed',
  /** onMachineFailure StopStep after another machine of the group failed. */
  GroupStopped: 'GroupStopped',
  /** A step with errorAction Stop failed earlier; later stages do not start. */
  DeploymentFailed: 'DeploymentFailed',
} as const;
export type TargetSkipReason = (typeof TargetSkipReason)[keyof typeof TargetSkipReason];

export interface StartAction {
  stageIndex: number;
  stepId: string;
  machineId: string;
}

export interface SkipAction {
  stageIndex: number;
  stepId: string;
  machineId: string;
  reason: TargetSkipReason;
  message: string;
}

export interface OutcomeIssue {
  stepId: string;
  machineId: string | null;
  kind: 'TargetFailed' | 'NoMatchingMachine' | 'NoTargets';
}

export interface DeploymentOutcome {
  status: 'Completed' | 'Failed';
  errorCount: number;
  warningCount: number;
  errors: OutcomeIssue[];
  warnings: OutcomeIssue[];
}

export interface NextActions {
  start: StartAction[];
  skip: SkipAction[];
  /** Every stage that has run to its end (after applying start and skip). */
  finishedStages: number[];
  /** Present once nothing is running and nothing more will start. */
  deploymentOutcome?: DeploymentOutcome;
}
