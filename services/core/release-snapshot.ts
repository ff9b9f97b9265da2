/**
 * The immutable snapshot a release freezes at creation (spec §2.1, contract §4): everything a
 * deployment of it needs, so later edits to the project never change what a release deploys.
 * Stored as JSON in releases.snapshot; `v` versions the shape.
 */
import type { ErrorAction, MachineOrder, OnMachineFailure, OnMemberFailure, OnNoTargets } from './vocabulary.ts';

export interface SnapshotPhaseEnvironment {
  environmentId: string;
  environmentName: string;
  howToTrigger: 'Automatic' | 'Manual';
}

export interface SnapshotPhase {
  phaseId: string;
  name: string;
  sortOrder: number;
  progressRequirement: 'AllMustComplete' | 'MinimumNumberToComplete' | 'OptionalPhase';
  progressRequirementErrorMode: 'NoErrorsNoWarnings' | 'NoErrorsAllowWarnings';
  progressRequirementCount: number;
  environments: SnapshotPhaseEnvironment[];
}

export interface SnapshotLifecycle {
  lifecycleId: string;
  name: string;
  phases: SnapshotPhase[];
}

export interface SnapshotPackage {
  packageId: string;
  version: string;
  sha256: string;
  sizeBytes: number;
  type: string;
}

export interface SnapshotStepTemplate {
  stepTemplateId: string;
  name: string;
  script: string;
  scriptLanguage: 'bash' | 'sh' | 'python' | 'powershell';
  /** Parsed propertiesRaw: [{Id, Name, Description, DefaultValue, ControlType}]. */
  properties: Array<{ Id: string; Name: string; DefaultValue: string | null; ControlType: string }>;
}

export interface SnapshotStep {
  stepId: string;
  name: string;
  sortOrder: number;
  errorAction: ErrorAction;
  disabled: boolean;
  parallelMachines: number | null;
  environmentIds: string[];
  machineIdFilter: string[];
  machineTagFilter: Array<{ tagIds: string[] }>;
  rollingGroupId: string | null;
  /** Property values by property ID (step propertiesJson over template defaults). */
  properties: Record<string, string>;
  template: SnapshotStepTemplate;
  /** Package IDs referenced by PackageSelector properties. */
  packageIds: string[];
}

export interface SnapshotRollingGroup {
  rollingGroupId: string;
  name: string;
  windowSize: number;
  machineOrder: MachineOrder;
  machineOrderTagIds: string[];
  waitBetweenMachineGroups: boolean;
  onMachineFailure: OnMachineFailure;
  onMemberFailure: OnMemberFailure;
  onNoTargets: OnNoTargets;
  memberStepIds: string[];
}

export interface SnapshotVariableValue {
  /** Plain text for Text variables; null for Sensitive ones (see valueEncrypted). */
  value: string | null;
  /** Sealed with the master key for Sensitive variables: snapshots never hold secrets in clear. */
  valueEncrypted: string | null;
  environmentsFilter: string[];
  machineFilter: string[];
  tagFilter: Array<{ tagIds: string[] }>;
  stepFilter: string[];
  channelFilter: string[];
}

export interface SnapshotVariable {
  variableId: string;
  name: string;
  variableType: 'Text' | 'Sensitive';
  source: 'project' | 'workspace';
  values: SnapshotVariableValue[];
}

export interface SnapshotScriptModule {
  scriptModuleId: string;
  name: string;
  script: string;
  scriptLanguage: string;
}

export interface ReleaseSnapshot {
  v: 1;
  project: { projectId: string; name: string; workspaceId: string };
  channel: { channelId: string; name: string } | null;
  lifecycle: SnapshotLifecycle | null;
  packages: SnapshotPackage[];
  steps: SnapshotStep[];
  rollingGroups: SnapshotRollingGroup[];
  variables: SnapshotVariable[];
  scriptModules: SnapshotScriptModule[];
}
