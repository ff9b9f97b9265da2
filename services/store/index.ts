/**
 * The store: the only code that speaks SQL. `createStore(db)` binds every aggregate to a knex
 * handle; `store.transaction(fn)` hands `fn` the same store bound to one transaction.
 */
import type { Knex } from 'knex';
import type { Db } from './db.ts';
import { seedInstallation, type SeedResult } from './seed.ts';
import { organizationsStore } from './organizations.ts';
import { workspacesStore } from './workspaces.ts';
import { serviceAccountsStore } from './service-accounts.ts';
import { environmentsStore } from './environments.ts';
import { projectsStore } from './projects.ts';
import { tagsStore } from './tags.ts';
import { machinesStore } from './machines.ts';
import { enrollmentKeysStore } from './enrollment-keys.ts';
import { lifecyclesStore } from './lifecycles.ts';
import { channelsStore } from './channels.ts';
import { stepTemplatesStore } from './step-templates.ts';
import { projectStepsStore } from './project-steps.ts';
import { rollingGroupsStore } from './rolling-groups.ts';
import { variablesStore } from './variables.ts';
import { scriptModulesStore } from './script-modules.ts';
import { feedsStore } from './feeds.ts';
import { cloudAccountsStore } from './cloud-accounts.ts';
import { releasesStore } from './releases.ts';
import { releaseInputsStore } from './release-inputs.ts';
import { deploymentsStore } from './deployments.ts';
import { deploymentTasksStore } from './deployment-tasks.ts';
import { deploymentLogsStore } from './deployment-logs.ts';
import { deploymentMachinesStore } from './deployment-machines.ts';
import { packagesStore } from './packages.ts';
import { idempotencyKeysStore } from './idempotency-keys.ts';
import { dashboardSessionsStore } from './dashboard-sessions.ts';
import { dashboardReadsStore } from './dashboard-reads.ts';
import { auditEventsStore } from './audit-events.ts';
import { deploymentApprovalsStore } from './deployment-approvals.ts';
import { deploymentFreezesStore } from './deployment-freezes.ts';
import { masterKeyCheckStore } from './master-key-check.ts';

function bind(db: Db) {
  return {
    organizations: organizationsStore(db),
    workspaces: workspacesStore(db),
    serviceAccounts: serviceAccountsStore(db),
    environments: environmentsStore(db),
    projects: projectsStore(db),
    tags: tagsStore(db),
    machines: machinesStore(db),
    enrollmentKeys: enrollmentKeysStore(db),
    lifecycles: lifecyclesStore(db),
    channels: channelsStore(db),
    stepTemplates: stepTemplatesStore(db),
    projectSteps: projectStepsStore(db),
    rollingGroups: rollingGroupsStore(db),
    variables: variablesStore(db),
    scriptModules: scriptModulesStore(db),
    feeds: feedsStore(db),
    cloudAccounts: cloudAccountsStore(db),
    releases: releasesStore(db),
    releaseInputs: releaseInputsStore(db),
    deployments: deploymentsStore(db),
    deploymentTasks: deploymentTasksStore(db),
    deploymentLogs: deploymentLogsStore(db),
    deploymentMachines: deploymentMachinesStore(db),
    packages: packagesStore(db),
    idempotencyKeys: idempotencyKeysStore(db),
    dashboardSessions: dashboardSessionsStore(db),
    dashboardReads: dashboardReadsStore(db),
    auditEvents: auditEventsStore(db),
    deploymentApprovals: deploymentApprovalsStore(db),
    deploymentFreezes: deploymentFreezesStore(db),
    masterKeyCheck: masterKeyCheckStore(db),
  };
}

export type Store = ReturnType<typeof bind> & {
  /** Runs fn in one transaction (a savepoint when already inside one). */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;
  /** Seeds an empty installation once (see seed.ts). */
  seed(): Promise<SeedResult>;
};

export function createStore(db: Db): Store {
  return {
    ...bind(db),
    transaction: <T>(fn: (tx: Store) => Promise<T>) => db.transaction((trx: Knex.Transaction) => fn(createStore(trx))),
    seed: () => seedInstallation(db),
  };
}

export { createDb, isUniqueViolation, isForeignKeyViolation, isDatabaseUnavailable, pingDatabase } from './db.ts';
export type { Db } from './db.ts';
export { migrateToLatest, migrationStatus, rollbackAll, SchemaTooNewError } from './migrate.ts';
export type { SeedResult } from './seed.ts';
export { startEmbeddedPostgres } from './embedded-postgres.ts';
export { DataFolderInUseError } from './leftover-postgres.ts';
export { holdReplicaPresence, type ReplicaPresence } from './replica-presence.ts';
export { REPLICA_PRESENCE_LOCK_KEY, type Reseal, type SealedTable } from './master-key-check.ts';
export type { EmbeddedDatabase } from './embedded-postgres.ts';
export type { Organization } from './organizations.ts';
export type { Workspace } from './workspaces.ts';
export type { ServiceAccount, ApiKey } from './service-accounts.ts';
export type { Environment } from './environments.ts';
export type { Project } from './projects.ts';
export type { Release } from './releases.ts';
export type { ReleaseInputs } from './release-inputs.ts';
export type { Deployment, NewDeployment, DeploymentFilter } from './deployments.ts';
export type { DeploymentTask, DispatchedTask } from './deployment-tasks.ts';
export type { DeploymentApproval, ApprovalDecision, ApproverScope } from './deployment-approvals.ts';
export type { DeploymentFreeze, FreezeRecurrence } from './deployment-freezes.ts';
export type {
  LogEntry,
  LogPage,
  LogTail,
  LogReport,
  NewLogChunk,
  NewLogEntry,
  TaskFinish,
  RecordClaim,
  RecordLease,
  RecordResult,
  TaskStarts,
} from './deployment-logs.ts';
export { MAX_LOG_PAGE_BYTES } from './deployment-logs.ts';
export { LogLevel } from './deployment-logs.ts';
export type { TargetMachine } from './deployment-machines.ts';
export type { Tag } from './tags.ts';
export type { AuditEvent, AuditFilter } from './audit-events.ts';
export type { Machine, MachineEnvironment, AgentInfo, AgentUpgrade, AgentUpgradeState } from './machines.ts';
export type { EnrollmentKey } from './enrollment-keys.ts';
export { MAX_LISTED_ENROLLMENT_KEYS } from './enrollment-keys.ts';
export { ProgressRequirement, ProgressRequirementErrorMode, HowToTrigger } from './lifecycles.ts';
export type { Lifecycle, Phase, PhaseEnvironment, PhaseFields } from './lifecycles.ts';
export type { Channel, ChannelPatch, PackageRule } from './channels.ts';
export type { StepTemplate, StepTemplateUsage } from './step-templates.ts';
export type { ProjectStep, ProjectStepPatch, TagSet } from './project-steps.ts';
export type { RollingGroupRecord, RollingGroupSettings } from './rolling-groups.ts';
export { VariableType } from './variables.ts';
export type { Variable, VariableValue, VariableValueFilters, VariableWithValues } from './variables.ts';
export type { ScriptModule } from './script-modules.ts';
export type { Feed } from './feeds.ts';
export type { CloudAccount } from './cloud-accounts.ts';
export { versionPrecedence } from './packages.ts';
export type { PackagesStore, StoredPackage, PendingUpload } from './packages.ts';
export type { DashboardSession } from './dashboard-sessions.ts';
export type { CellDeployment, ReleaseRow as DashboardRelease } from './dashboard-reads.ts';
