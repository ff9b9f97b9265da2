/**
 * Use cases: business rules per resource. Every function takes (deps, principal, input), checks
 * scope and capability itself, and throws the core errors. Never sees request or reply.
 */
export type { CreatedDeployment, DomainDeps, DeploymentChanges } from './deps.ts';
export { followDeployment } from './deployment-events.ts';
export { downloadDeploymentLog } from './deployment-log-download.ts';
export { followWorkspace, getOverview, getProjectPage, getReleaseForm, permission } from './dashboard.ts';
export type { OverviewView, ProjectPageView, ReleaseFormView, Permission, Cell, WorkspaceChange } from './dashboard.ts';
export { getDeploymentPage, getMachinesPage, getTopology } from './dashboard-details.ts';
export type { DeploymentPageView, MachinesPageView, TopologyView } from './dashboard-details.ts';
export type { DeploymentEvent, FollowOptions } from './deployment-events.ts';
export { authenticate } from './authentication.ts';
export { createReadCaches, READ_CACHE_MAX_AGE_MS } from './read-caches.ts';
export type { ReadCaches } from './read-caches.ts';
export { listAuditEvents, recordChange, recordSignIn, sendChangeRecord, withoutSecrets } from './audit.ts';
export type { AuditQuery, ChangeRecord } from './audit.ts';
export type { AuditEvent } from '../store/index.ts';
export { redeemRegistrationToken, machineForCredential } from './agent-identity.ts';
export type { AgentIdentityStore, AgentMachine, AgentSelfReport } from './agent-identity.ts';
// Whether a failure is the database being unavailable (the API answers 503 and asks to retry).
export { isDatabaseUnavailable } from '../store/index.ts';
export { SESSION_TTL_MS, csrfTokenOf, isCsrfTokenOf, signIn, authenticateSession, signOut } from './sessions.ts';
export type { SessionContext, OpenedSession } from './sessions.ts';
export { bootstrap } from './bootstrap.ts';
export type { BootstrapOptions, BootstrapResult } from './bootstrap.ts';
export { masterKeyProblem, rotateMasterKey, type RotationCounts, type RotationOutcome } from './master-key.ts';
export { visibleWorkspace, visibleResource, withUniqueName } from './scope.ts';
export {
  listWorkspaces,
  createWorkspace,
  updateWorkspace,
  deleteWorkspace,
  getOrganizationSettings,
  updateOrganizationSettings,
} from './workspaces.ts';
export {
  getMe,
  createServiceAccount,
  listServiceAccounts,
  deleteServiceAccount,
  createApiKey,
  listApiKeys,
  deleteApiKey,
} from './service-accounts.ts';
export {
  listEnvironments,
  getEnvironment,
  createEnvironment,
  updateEnvironment,
  deleteEnvironment,
} from './environments.ts';
export { visibleProject, listProjects, getProject, createProject, updateProject, deleteProject } from './projects.ts';
export { cloneProject } from './project-clone.ts';
export { listTags, createTag, updateTag, deleteTag, requireTags } from './tags.ts';
export {
  MachineStatus,
  machineStatus,
  isAgentOnline,
  REGISTRATION_TOKEN_TTL_MS,
  HEARTBEAT_WINDOW_MS,
  listMachines,
  getMachine,
  createMachine,
  updateMachine,
  deleteMachine,
  renewRegistrationToken,
  getMachineEnvironments,
  setMachineEnvironments,
  addMachineEnvironment,
  removeMachineEnvironment,
} from './machines.ts';
export type { MachineView } from './machines.ts';
export { machinesToUpgrade, requestAgentUpgrade } from './agent-upgrades.ts';
export type { UpgradeOutcome, UpgradeRequestResult } from './agent-upgrades.ts';
export { MachineHealth, machineHealth, DEFAULT_MACHINE_HEALTH_LIMITS } from './machine-health.ts';
export type { MachineHealthLimits } from './machine-health.ts';
export {
  HowToTrigger,
  ProgressRequirement,
  ProgressRequirementErrorMode,
  visibleLifecycle,
  listLifecycles,
  getLifecycle,
  createLifecycle,
  updateLifecycle,
  deleteLifecycle,
} from './lifecycles.ts';
export type { LifecycleReadModel, PhaseReadModel, PhaseInput, PhaseEnvironmentInput } from './lifecycles.ts';
export { addPhase, updatePhase, deletePhase, setPhaseEnvironment, removePhaseEnvironment } from './lifecycle-phases.ts';
export type { PhaseUpdate } from './lifecycle-phases.ts';
export { computeProgression, automaticEnvironmentsDue } from './lifecycle-progression.ts';
export type {
  Progression,
  PhaseProgress,
  EnvironmentAvailability,
  ProgressionDeployment,
  ProgressionEnvironment,
} from './lifecycle-progression.ts';
export { listChannels, createChannel, updateChannel, deleteChannel } from './channels.ts';
export type { ChannelInput, PackageRuleInput } from './channels.ts';
export {
  MAX_PRE_RELEASE_TAG_LENGTH,
  MAX_VERSION_RANGE_LENGTH,
  isValidVersionRange,
  compilePreReleaseTag,
  versionSatisfiesChannel,
} from './channel-rules.ts';
export type { VersionRule } from './channel-rules.ts';
export {
  ScriptLanguage,
  DEFAULT_RUN_MODES,
  PACKAGE_SELECTOR,
  parseTemplateProperties,
  listStepTemplates,
  getStepTemplate,
  createStepTemplate,
  updateStepTemplate,
  deleteStepTemplate,
} from './step-templates.ts';
export type { TemplateProperty, StepTemplateInput } from './step-templates.ts';
export {
  visibleStep,
  listProjectSteps,
  createProjectStep,
  updateProjectStep,
  deleteProjectStep,
  reorderProjectSteps,
  cloneProjectStep,
} from './project-steps.ts';
export type { ProjectStepUpdate } from './project-steps.ts';
export {
  listRollingGroups,
  createRollingGroup,
  updateRollingGroup,
  deleteRollingGroup,
  moveStepToRollingGroup,
} from './rolling-groups.ts';
export type { RollingGroup } from './rolling-groups.ts';
export {
  VariableKind,
  toVariableView,
  listProjectVariables,
  createProjectVariable,
  updateProjectVariable,
  deleteProjectVariable,
  createProjectVariableValue,
  updateProjectVariableValue,
  deleteProjectVariableValue,
  loadVariableCandidates,
} from './variables.ts';
export type { FilterInput, VariableInput, VariableView, VariableValueView } from './variables.ts';
export {
  listWorkspaceVariables,
  createWorkspaceVariable,
  updateWorkspaceVariable,
  deleteWorkspaceVariable,
  createWorkspaceVariableValue,
  updateWorkspaceVariableValue,
  deleteWorkspaceVariableValue,
  listImportedWorkspaceVariables,
  setImportedWorkspaceVariables,
  importWorkspaceVariable,
  removeWorkspaceVariableImport,
} from './workspace-variables.ts';
export type { ImportedVariable } from './workspace-variables.ts';
export {
  VariableSource,
  VariableSubstitution,
  VariableCycleError,
  VariableExpansionTooLargeError,
  SYSTEM_VALUE_NAMES,
  MAX_EXPANDED_LENGTH,
  MAX_NESTING_DEPTH,
  MASK,
  resolveVariables,
  substituteVariables,
  misnamedSystemReferences,
  maskSecrets,
} from './variable-resolution.ts';
export type {
  CandidateValue,
  ValueFilters,
  ResolutionTarget,
  ResolvedVariable,
  ResolvedVariables,
  SystemValueName,
  SystemValues,
} from './variable-resolution.ts';
export {
  listScriptModules,
  getScriptModule,
  createScriptModule,
  updateScriptModule,
  deleteScriptModule,
  listProjectScriptModules,
  setProjectScriptModules,
  addProjectScriptModule,
  removeProjectScriptModule,
} from './script-modules.ts';
export type { ScriptModuleInput } from './script-modules.ts';
export {
  BUILTIN_FEED_NAME,
  BUILTIN_FEED_TYPE,
  FeedType,
  ensureBuiltinFeed,
  listFeeds,
  getFeed,
  createFeed,
  updateFeed,
  deleteFeed,
} from './feeds.ts';
export type { FeedView, FeedInput } from './feeds.ts';
export {
  CloudAccountType,
  MAX_CONFIG_BYTES,
  isSecretKey,
  maskConfig,
  mergeConfig,
  listCloudAccounts,
  getCloudAccount,
  readCloudAccountConfig,
  createCloudAccount,
  updateCloudAccount,
  deleteCloudAccount,
} from './cloud-accounts.ts';
export type { CloudConfig, CloudAccountView } from './cloud-accounts.ts';
export { createRelease, listReleases, getReleaseDetails } from './releases.ts';
export type { CreateReleaseInput, ReleaseDetails } from './releases.ts';
export { deployRelease, promoteRelease } from './deployment-requests.ts';
export { approvalsByPhase, checkGate, gateOfNew } from './deployment-gates.ts';
export type { GateDecision } from './deployment-gates.ts';
export { approveDeployment, rejectDeployment, listPendingApprovals } from './approvals.ts';
export type { DecisionInput, DecisionResult, PendingApproval } from './approvals.ts';
export { createFreeze, getFreeze, updateFreeze, deleteFreeze, listFreezes } from './freezes.ts';
export type { FreezeInput } from './freezes.ts';
export { freezeEndsAt, parseCron } from './freeze-windows.ts';
export { rollbackRelease } from './rollback.ts';
export type { RollbackResult } from './rollback.ts';
export type { EnvironmentRequest, FreezeOverride, TargetRequest } from './deployment-requests.ts';
export {
  getDeployment,
  cancelDeployment,
  listDeployments,
  getDeploymentTargets,
  MAX_LOGS_PER_READ,
} from './deployments.ts';
export type { DeploymentView, DeploymentListQuery, TargetsView } from './deployments.ts';
export { enrollLocalMachine } from './local-machine.ts';
export {
  createEnrollmentKey,
  listEnrollmentKeys,
  revokeEnrollmentKey,
  ensureBootstrapEnrollmentKey,
  redeemEnrollmentKey,
  MAX_ENROLLMENT_KEY_HOURS,
} from './enrollment-keys.ts';
export type { EnrollmentResult, EnrollmentReport } from './enrollment-keys.ts';
export { packageSelections } from './release-snapshot-builder.ts';
