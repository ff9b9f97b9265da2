export {
  ErrorCode,
  GantryError,
  InvalidParameterError,
  InvalidCredentialsError,
  InvalidAccessTokenError,
  InsufficientPermissionsError,
  LimitExceededError,
  ConflictError,
  SignatureRefusedError,
  toError,
  unknownId,
} from './errors.ts';
export type { ValidationError, ResourceUsageError } from './errors.ts';
export { newId, ID_PATTERN, isWellFormedId } from './ids.ts';
export {
  DeploymentStatus,
  FINAL_STATUSES,
  ACTIVE_STATUSES,
  isFinalStatus,
  TaskStatus,
  FINAL_TASK_STATUSES,
  ErrorAction,
  MachineMode,
  MachineOrder,
  OnMachineFailure,
  OnMemberFailure,
  OnNoTargets,
  LogLevelFloor,
} from './vocabulary.ts';
export { isStorableText, findUnstorableText } from './text.ts';
export { encodeVarints, decodeVarints } from './varints.ts';
export { BoundedCache } from './bounded-cache.ts';
export { CoalescedBatch } from './coalesced-batch.ts';
export { ExpiringCache } from './expiring-cache.ts';
export { freePort } from './free-port.ts';
export { checkReadiness } from './readiness.ts';
export { createMetrics, serveMetrics } from './metrics.ts';
export type { Metrics, MetricSources, MetricsServer, BusOperation } from './metrics.ts';
export type { ReadinessCheck, ReadinessReport } from './readiness.ts';
export { systemClock, dateToTicks, ticksToDate, parseTicks, MAX_INT64 } from './clock.ts';
export type { Clock } from './clock.ts';
export { toPage, DEFAULT_TAKE, MAX_TAKE } from './pagination.ts';
export type { Page, PageRequest, Paged } from './pagination.ts';
export { Capability, CAPABILITIES, can, authorize } from './principal.ts';
export type { Principal, Role, Target } from './principal.ts';
export { createLogger, REDACTED_PATHS } from './logger.ts';
export type { Logger } from './logger.ts';
export {
  adoptNextMasterKey,
  createSecretBox,
  loadMasterKey,
  masterKeyCheck,
  nextMasterKeyFile,
  settleRotatedKeyFile,
  writeNextMasterKey,
} from './secret-box.ts';
export type { SecretBox } from './secret-box.ts';
export { newSecret, hashSecret } from './hash.ts';
export type {
  ReleaseSnapshot,
  SnapshotStep,
  SnapshotStepTemplate,
  SnapshotRollingGroup,
  SnapshotVariable,
  SnapshotVariableValue,
  SnapshotLifecycle,
  SnapshotPhase,
  SnapshotPhaseEnvironment,
  SnapshotPackage,
  SnapshotScriptModule,
} from './release-snapshot.ts';
export { isValidSemVer, compareSemVer, maxSemVer, sortSemVerDescending, semverEqual, expandQuery } from './semver.ts';
export {
  AGENT_CA_FILE,
  certificateFingerprint,
  loadAgentTls,
  pemCertificates,
  type AgentTlsMaterial,
} from './agent-tls.ts';
