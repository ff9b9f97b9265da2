/** Response shapes of the dashboard's page reads (issue #11). */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Id, PageQuery } from '../../schemas.ts';

/**
 * `T | null` as a JSON Schema type list rather than anyOf: the serializer then tells the two
 * apart with a typeof check instead of running a validator per value, which made the overview's
 * 600 cells cost more to serialize than to read.
 */
const Nullable = <T extends TSchema & { type: string }>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });

const Search = Type.Optional(Type.String({ maxLength: 200, description: 'A case-insensitive substring to filter by' }));
const Time = Type.String({ format: 'date-time' });

export const PermissionSchema = Type.Object({ allowed: Type.Boolean(), reason: Nullable(Type.String()) });

export const EnvironmentRef = Type.Object({
  environmentId: Id,
  name: Type.String(),
  color: Nullable(Type.String()),
  enabled: Type.Boolean(),
  requiredApprovals: Type.Integer({ description: 'approvals a deployment to it needs before it starts (0: none)' }),
});

export const CellDeploymentSchema = Type.Object({
  deploymentId: Id,
  releaseId: Id,
  version: Type.String(),
  status: Type.String(),
  automatic: Type.Boolean(),
  requestedBy: Nullable(Type.String({ description: 'The account that asked; null for automatic deployments' })),
  createdUtc: Time,
  completedUtc: Nullable(Time),
  waitReason: Nullable(Type.String({ description: 'Why a deployment that has not started waits' })),
});

const CellSchema = Type.Object({ environmentId: Id, deployment: Nullable(CellDeploymentSchema) });

export const OverviewQuery = Type.Object({ workspaceId: Id, search: Search, ...PageQuery });
export const OverviewResponse = Type.Object({
  workspace: Type.Object({ workspaceId: Id, name: Type.String() }),
  workspaces: Type.Array(Type.Object({ workspaceId: Id, name: Type.String() })),
  environments: Type.Array(EnvironmentRef),
  projects: Type.Array(Type.Object({ projectId: Id, name: Type.String(), cells: Type.Array(CellSchema) })),
  totalCount: Type.Integer(),
});

export const ProjectPageQuery = Type.Object({ projectId: Id, search: Search, ...PageQuery });
export const ProjectPageResponse = Type.Object({
  project: Type.Object({
    projectId: Id,
    workspaceId: Id,
    name: Type.String(),
    description: Nullable(Type.String()),
    lifecycleName: Nullable(Type.String()),
  }),
  environments: Type.Array(EnvironmentRef),
  channels: Type.Array(Type.Object({ channelId: Id, name: Type.String(), isDefault: Type.Boolean() })),
  releases: Type.Array(
    Type.Object({
      releaseId: Id,
      version: Type.String(),
      channelName: Nullable(Type.String()),
      notes: Nullable(Type.String()),
      createdUtc: Time,
      environments: Type.Array(
        Type.Object({
          environmentId: Id,
          deployment: Nullable(CellDeploymentSchema),
          available: Type.Boolean(),
          reason: Nullable(Type.String({ description: 'Why the lifecycle does not allow it now' })),
          deploy: PermissionSchema,
        }),
      ),
    }),
  ),
  totalCount: Type.Integer(),
  createRelease: PermissionSchema,
});

export const DeploymentPageQuery = Type.Object({ deploymentId: Id });
export const DeploymentPageResponse = Type.Object({
  deployment: Type.Object({
    deploymentId: Id,
    workspaceId: Id,
    projectId: Id,
    projectName: Type.String(),
    releaseId: Id,
    version: Type.String(),
    environmentId: Id,
    environmentName: Type.String(),
    status: Type.String(),
    automatic: Type.Boolean(),
    requestedBy: Nullable(Type.String()),
    createdUtc: Time,
    startedUtc: Nullable(Time),
    completedUtc: Nullable(Time),
    cancellationRequestedUtc: Nullable(Time),
    scheduledUtc: Nullable(Time),
    errorCount: Type.Integer(),
    warningCount: Type.Integer(),
    failureMessage: Nullable(Type.String()),
    waitReason: Nullable(Type.String()),
  }),
  steps: Type.Array(
    Type.Object({
      stepId: Type.String(),
      name: Type.String(),
      rollingGroup: Nullable(Type.Object({ name: Type.String(), windowSize: Type.Integer() })),
      targets: Type.Array(
        Type.Object({
          taskId: Id,
          machineId: Nullable(Type.String()),
          machineName: Nullable(Type.String()),
          status: Type.String(),
          startedUtc: Nullable(Time),
          finishedUtc: Nullable(Time),
          exitCode: Nullable(Type.Integer()),
          message: Nullable(Type.String()),
          window: Nullable(Type.Integer()),
        }),
      ),
    }),
  ),
  cancel: PermissionSchema,
  waitingReason: Nullable(
    Type.String({ description: 'Issue #15: why a Queued or AwaitingSlot deployment waits (as GET /api/deployment)' }),
  ),
  queuePosition: Nullable(Type.Integer({ description: 'Issue #15: its place among deployments awaiting a slot' })),
  approval: Nullable(
    Type.Object(
      {
        requiredApprovals: Type.Integer(),
        approvedBy: Type.Array(Type.String()),
        awaiting: Type.Boolean(),
        decide: PermissionSchema,
      },
      { description: 'Issue #15: the approvals the deployment needs; null when it needs none' },
    ),
  ),
});

const MachineStatus = Type.Union([Type.Literal('Pending'), Type.Literal('Online'), Type.Literal('Offline')]);
export const MachinesPageQuery = Type.Object({
  workspaceId: Id,
  search: Search,
  status: Type.Optional(MachineStatus),
  ...PageQuery,
});
export const MachinesPageResponse = Type.Object({
  machines: Type.Array(
    Type.Object({
      machineId: Id,
      name: Type.String(),
      status: MachineStatus,
      enabled: Type.Boolean(),
      lastSeenUtc: Nullable(Time),
      agentVersion: Nullable(Type.String()),
      os: Nullable(Type.String()),
      hostname: Nullable(Type.String()),
      environments: Type.Array(Type.Object({ environmentId: Id, name: Type.String() })),
      tags: Type.Array(Type.Object({ tagId: Id, name: Type.String(), color: Nullable(Type.String()) })),
    }),
  ),
  totalCount: Type.Integer(),
  environments: Type.Array(EnvironmentRef),
  addMachine: PermissionSchema,
  agentServer: Type.String({ description: 'host:port agents connect to (GANTRY_SERVER of the registration command)' }),
});

export const TopologyQuery = Type.Object({ workspaceId: Id, projectId: Type.Optional(Id) });
export const TopologyResponse = Type.Object({
  environments: Type.Array(EnvironmentRef),
  lifecycles: Type.Array(
    Type.Object({
      lifecycleId: Id,
      name: Type.String(),
      phases: Type.Array(
        Type.Object({
          name: Type.String(),
          progressRequirement: Type.String(),
          progressRequirementCount: Type.Integer(),
          environments: Type.Array(Type.Object({ environmentName: Type.String(), howToTrigger: Type.String() })),
        }),
      ),
    }),
  ),
  projects: Type.Array(Type.Object({ projectId: Id, name: Type.String() })),
  project: Nullable(
    Type.Object({
      projectId: Id,
      name: Type.String(),
      steps: Type.Array(
        Type.Object({
          projectStepId: Id,
          name: Type.String(),
          sortOrder: Type.Integer(),
          errorAction: Type.String(),
          disabled: Type.Boolean(),
          rollingGroupId: Nullable(Type.String()),
          environmentIds: Type.Array(Type.String()),
        }),
      ),
      rollingGroups: Type.Array(
        Type.Object({
          rollingGroupId: Id,
          name: Type.String(),
          windowSize: Type.Integer(),
          machineOrder: Type.String(),
        }),
      ),
      variables: Type.Array(
        Type.Object({
          variableId: Id,
          name: Type.String(),
          variableType: Type.String(),
          values: Type.Array(
            Type.Object({
              // Sensitive values are masked here, never sent: the server only has ciphertext to hide.
              value: Type.String(),
              scope: Type.String(),
            }),
          ),
        }),
      ),
    }),
  ),
});

export const ReleaseFormQuery = Type.Object({ projectId: Id });
export const ReleaseFormResponse = Type.Object({
  projectId: Id,
  nextVersion: Type.String(),
  channels: Type.Array(Type.Object({ channelId: Id, name: Type.String(), isDefault: Type.Boolean() })),
  packages: Type.Array(
    Type.Object({
      packageId: Type.String(),
      versions: Type.Array(Type.String(), { description: 'Highest SemVer first: the first is the latest' }),
    }),
  ),
  createRelease: PermissionSchema,
});
