import { Type } from '@sinclair/typebox';
import { DeploymentStatus, MachineMode } from '../../../core/index.ts';
import { Id, Nullable, OneOf, PageQuery, TicksText } from '../../schemas.ts';

/** .NET ticks and change ticks exceed 2^53: integers on the wire, BigInt in code (never Number). */
export const Int64 = Type.Unsafe<bigint>({ type: 'integer', format: 'int64' });

const EnvironmentTarget = Type.Union([
  Type.String({ minLength: 1, maxLength: 200 }),
  Type.Object({
    environmentName: Type.String({ minLength: 1, maxLength: 200 }),
    machineMode: Type.Optional(OneOf(MachineMode)),
    machineIds: Type.Optional(Type.Array(Id, { maxItems: 1000 })),
  }),
]);

const TargetFields = {
  phaseName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  environmentName: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Obsolete: use environments' }),
  ),
  environments: Type.Optional(Type.Array(EnvironmentTarget, { maxItems: 100 })),
  redownloadPackages: Type.Optional(Type.Boolean()),
  // The latest instant a JavaScript Date holds (year 275760).
  deploymentDateUnixMillis: Type.Optional(Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000 })),
  excludeStepNames: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 500 })),
  freezeOverrideReason: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'Gantry extension: deploy during a deployment freeze (needs OverrideFreeze); logged',
    }),
  ),
};

/** Gantry extension (issue #15): why a Queued or AwaitingSlot deployment waits, and its place in the slot queue. */
export const WaitingFields = {
  waitingReason: Nullable(Type.String()),
  queuePosition: Nullable(Type.Integer()),
};

export const DeployBody = Type.Object({ releaseId: Id, ...TargetFields });
export const PromoteBody = Type.Object({
  projectId: Id,
  version: Type.Optional(Type.String({ maxLength: 300 })),
  ...TargetFields,
});
/** Gantry extension: present when the request deployed during a freeze (OverrideFreeze). */
export const FreezeOverrideSchema = Type.Optional(
  Type.Object({ reason: Type.String(), freezes: Type.Array(Type.String()) }),
);
export const DeployResponse = Type.Object({ deploymentIds: Type.Array(Id), freezeOverride: FreezeOverrideSchema });
export const PromoteResponse = Type.Object({
  deploymentId: Id,
  deploymentIds: Type.Array(Id),
  freezeOverride: FreezeOverrideSchema,
});

export const DeploymentQuery = Type.Object({
  deploymentId: Id,
  skipLogs: Type.Optional(Type.Boolean()),
  // Text, not a number: ticks exceed 2^53 and must be read exactly.
  getLogsAfter: Type.Optional(TicksText('.NET ticks; logs strictly after it')),
});

/** PascalCase inside `status` and `logs`, as spec §2.2–2.3 and the real clients require. */
export const StatusSchema = Type.Object({
  Status: Type.String(),
  ErrorCount: Type.Integer(),
  WarningCount: Type.Integer(),
  LastLogDate: Nullable(Type.String()),
  // 0 until the first log line: a plain integer keeps typed clients (Gson long) and BigInt serialization simple.
  LastLogDateTick: Int64,
  LastUpdate: Type.String(),
  CancellationRequestedDate: Nullable(Type.String()),
  LastAttemptDate: Nullable(Type.String()),
  CompleteDate: Nullable(Type.String()),
});

export const LogSchema = Type.Object({
  CreatedLocalTime: Nullable(Type.String()),
  CreatedUtc: Type.String(),
  CreatedUtcTick: Int64,
  Data: Type.String(),
  DeploymentId: Id,
  DeploymentMonitorId: Nullable(Type.String()),
  ErrorCount: Type.Integer(),
  WarningCount: Type.Integer(),
  ExceptionData: Nullable(Type.String()),
  Id: Type.String(),
  LogLevel: Type.String(),
  ParentLogId: Nullable(Type.String()),
  StepId: Nullable(Type.String()),
});

export const DeploymentResponse = Type.Object({
  status: StatusSchema,
  logs: Type.Array(LogSchema),
  ...WaitingFields,
  environmentName: Type.String({
    description: 'Gantry extension: the environment it deploys to (known before any log line names it)',
  }),
});

export const ListQuery = Type.Object({
  workspaceId: Type.Optional(Id),
  projectId: Type.Optional(Id),
  releaseId: Type.Optional(Id),
  version: Type.Optional(Type.String({ maxLength: 300 })),
  status: Type.Optional(OneOf(DeploymentStatus)),
  changedAfterTick: Type.Optional(TicksText('Deployments changed strictly after this change tick')),
  ...PageQuery,
});

export const ListResponse = Type.Object({
  deployments: Type.Array(
    Type.Object({
      deploymentId: Id,
      releaseId: Id,
      projectId: Id,
      version: Type.String(),
      environmentId: Id,
      environmentName: Type.String(),
      status: Type.String(),
      automatic: Type.Boolean(),
      scheduledUtc: Nullable(Type.String()),
      createdUtc: Type.String(),
      completedUtc: Nullable(Type.String()),
      lastChangeTick: Int64,
      ...WaitingFields,
      requiredApprovals: Type.Integer(),
      rollback: Type.Boolean(),
      rolledBackFromReleaseId: Nullable(Id),
    }),
  ),
  totalCount: Type.Integer(),
  lastChangeTick: Int64,
});

export const TargetsResponse = Type.Object({
  deploymentId: Id,
  steps: Type.Array(
    Type.Object({
      projectStepId: Type.String(),
      name: Type.String(),
      targets: Type.Array(
        Type.Object({
          machineId: Nullable(Type.String()),
          machineName: Nullable(Type.String()),
          status: Type.String(),
          startedUtc: Nullable(Type.String()),
          finishedUtc: Nullable(Type.String()),
          exitCode: Nullable(Type.Integer()),
        }),
      ),
    }),
  ),
});
