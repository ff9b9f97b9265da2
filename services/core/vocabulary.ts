/**
 * Gantry's words and the values they take — the one place each list is written; every layer
 * (API schemas, domain rules, release snapshots, the planner, the store) imports it.
 *
 * Glossary:
 * - project: what gets deployed; holds ordered steps (each from a step template), variables,
 *   channels, and a lifecycle (the ordered phases of environments it moves through).
 * - release: a project frozen at a version: a snapshot of its steps, variables, packages and
 *   lifecycle taken when the release is created (later edits do not change it).
 * - deployment: one release going to one environment: queued, then run stage by stage.
 * - step: one action of a project (a script, with packages); consecutive steps may form a
 *   rolling group, which a machine completes before the next machine in its window starts.
 * - target: one (step, machine) pair of a deployment — a machine-less step has one target.
 * - task: the record of a target the engine plans, dispatches and stores (its status is the
 *   target's status in GET /api/deployment/targets); the unit an agent runs.
 * - agent: the process on a machine that connects to the control plane, runs its tasks and
 *   streams their log lines back; a machine is the registered target host of one agent.
 * - lease: a replica's time-limited claim to drive a deployment; another replica takes the
 *   deployment over once the lease expires (its holder died).
 */

/** The values of a const object: `Values<typeof X>`. */
type Values<T> = T[keyof T];

/** A deployment's status (spec §2.2): active until one of the final three. */
export const DeploymentStatus = {
  Queued: 'Queued',
  Validating: 'Validating',
  AwaitingSlot: 'AwaitingSlot',
  Running: 'Running',
  Completed: 'Completed',
  Failed: 'Failed',
  Cancelled: 'Cancelled',
} as const;
export type DeploymentStatus = Values<typeof DeploymentStatus>;
export const FINAL_STATUSES = ['Completed', 'Failed', 'Cancelled'] as const satisfies readonly DeploymentStatus[];
export const ACTIVE_STATUSES = [
  'Queued',
  'Validating',
  'AwaitingSlot',
  'Running',
] as const satisfies readonly DeploymentStatus[];
const FINAL: ReadonlySet<string> = new Set(FINAL_STATUSES);
/** Completed, Failed or Cancelled: the deployment never changes again. */
export const isFinalStatus = (status: string): boolean => FINAL.has(status);

/** A task's (a target's) status. */
export const TaskStatus = {
  Pending: 'Pending',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
  Skipped: 'Skipped',
  Cancelled: 'Cancelled',
} as const;
export type TaskStatus = Values<typeof TaskStatus>;
export const FINAL_TASK_STATUSES = [
  'Succeeded',
  'Failed',
  'Skipped',
  'Cancelled',
] as const satisfies readonly TaskStatus[];

/** What a step's failure does to the deployment. */
export const ErrorAction = { Stop: 'Stop', ContinueOnError: 'ContinueOnError', Continue: 'Continue' } as const;
export type ErrorAction = Values<typeof ErrorAction>;

/** Which of an environment's machines a deployment targets. */
export const MachineMode = { All: 'All', Include: 'Include', Exclude: 'Exclude' } as const;
export type MachineMode = Values<typeof MachineMode>;

/** Rolling groups (spec §2.5): the order machines go in… */
export const MachineOrder = { MachineName: 'MachineName', TagPriority: 'TagPriority' } as const;
export type MachineOrder = Values<typeof MachineOrder>;
/** …what a machine's failure does to the others… */
export const OnMachineFailure = { StopStep: 'StopStep', ContinueToOtherMachines: 'ContinueToOtherMachines' } as const;
export type OnMachineFailure = Values<typeof OnMachineFailure>;
/** …what a member step's failure does to the rest on that machine… */
export const OnMemberFailure = {
  SkipRestOnThisMachine: 'SkipRestOnThisMachine',
  ContinueMembers: 'ContinueMembers',
} as const;
export type OnMemberFailure = Values<typeof OnMemberFailure>;
/** …and what a group with no machine to run on does. */
export const OnNoTargets = { Skip: 'Skip', Warn: 'Warn', Fail: 'Fail' } as const;
export type OnNoTargets = Values<typeof OnNoTargets>;

/**
 * The least level of the log lines a reader asks for (none: every line): the dashboard's
 * "Warnings and errors" over a log longer than the part it holds.
 */
export const LogLevelFloor = { Warning: 'Warning', Error: 'Error' } as const;
export type LogLevelFloor = Values<typeof LogLevelFloor>;
