import { Type } from '@sinclair/typebox';
import { Description, Id, Name, Nullable, PageQuery } from '../../schemas.ts';
import { FreezeOverrideSchema } from '../deployments/schemas.ts';

const Comment = Type.Optional(Nullable(Type.String({ maxLength: 2000 })));

export const DecisionBody = Type.Object({ deploymentId: Id, comment: Comment });
export const DecisionResponse = Type.Object({
  deploymentId: Id,
  decision: Type.String({ description: 'Approved or Rejected' }),
  comment: Nullable(Type.String()),
  approvals: Type.Integer({ description: 'Approvals the deployment has now' }),
  requiredApprovals: Type.Integer(),
});

export const PendingQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const PendingList = Type.Object({
  approvals: Type.Array(
    Type.Object({
      deploymentId: Id,
      projectId: Id,
      releaseId: Id,
      version: Type.String(),
      environmentId: Id,
      environmentName: Type.String(),
      requestedBy: Nullable(Type.Object({ serviceAccountId: Type.String(), name: Type.String() })),
      automatic: Type.Boolean(),
      createdUtc: Type.String(),
      requiredApprovals: Type.Integer(),
      approvedBy: Type.Array(
        Type.Object({
          serviceAccountId: Type.String(),
          name: Type.String(),
          comment: Nullable(Type.String()),
          createdUtc: Type.String(),
        }),
      ),
      waitingReason: Nullable(Type.String()),
    }),
  ),
  totalCount: Type.Integer(),
});

export const RollbackBody = Type.Object({
  projectId: Id,
  environmentName: Type.String({ minLength: 1, maxLength: 200 }),
  freezeOverrideReason: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
});
export const RollbackResponse = Type.Object({
  deploymentId: Id,
  deploymentIds: Type.Array(Id),
  releaseId: Id,
  version: Type.String(),
  rolledBackFromReleaseId: Id,
  rolledBackFromVersion: Type.String(),
  freezeOverride: FreezeOverrideSchema,
});

const Recurrence = Type.Object({
  cron: Type.String({
    minLength: 9,
    maxLength: 200,
    description: 'minute hour day-of-month month day-of-week: when each window starts',
  }),
  durationMinutes: Type.Integer({ minimum: 1, maximum: 10_080 }),
  timeZone: Type.String({ minLength: 1, maxLength: 100, description: 'IANA time zone, e.g. Europe/Berlin' }),
});
const Timestamp = Nullable(Type.String({ format: 'date-time', maxLength: 40 }));

const freezeFields = {
  description: Type.Optional(Description),
  startUtc: Type.Optional(Timestamp),
  endUtc: Type.Optional(Timestamp),
  recurrence: Type.Optional(Nullable(Recurrence)),
  projectIds: Type.Optional(Type.Array(Id, { maxItems: 500, description: 'Empty or absent: every project' })),
};

export const CreateFreezeBody = Type.Object({
  workspaceId: Id,
  name: Name,
  environmentIds: Type.Array(Id, { minItems: 1, maxItems: 500 }),
  ...freezeFields,
});
export const UpdateFreezeBody = Type.Object({
  freezeId: Id,
  name: Type.Optional(Name),
  environmentIds: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: 500 })),
  ...freezeFields,
});
export const FreezeIdBody = Type.Object({ freezeId: Id });
export const FreezeIdQuery = Type.Object({ freezeId: Id });
export const CreatedFreeze = Type.Object({ freezeId: Id });
export const ListFreezesQuery = Type.Object({ workspaceId: Id, ...PageQuery });

export const FreezeSchema = Type.Object({
  freezeId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  startUtc: Nullable(Type.String()),
  endUtc: Nullable(Type.String()),
  recurrence: Nullable(Recurrence),
  environmentIds: Type.Array(Id),
  projectIds: Type.Array(Id),
  activeUntilUtc: Nullable(
    Type.String({ description: 'When the window in force now ends; null when it does not hold now' }),
  ),
});
export const FreezeList = Type.Object({ freezes: Type.Array(FreezeSchema), totalCount: Type.Integer() });
