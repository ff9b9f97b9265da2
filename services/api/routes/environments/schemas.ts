import { Type } from '@sinclair/typebox';
import { Description, Id, Int32, Name, Nullable, PageQuery } from '../../schemas.ts';

export const EnvironmentSchema = Type.Object({
  environmentId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  sortOrder: Type.Integer(),
  color: Nullable(Type.String()),
  enabled: Type.Boolean(),
  requiredApprovals: Type.Integer(),
});

export const ListEnvironmentsQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const EnvironmentList = Type.Object({ environments: Type.Array(EnvironmentSchema), totalCount: Type.Integer() });

/** Approvals by distinct accounts a deployment needs before it starts (Gantry extension, issue #15). */
const RequiredApprovals = Type.Integer({ minimum: 0, maximum: 10 });
const Color = Nullable(Type.String({ maxLength: 50 }));

export const CreateEnvironmentBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  sortOrder: Type.Optional(Int32()),
  color: Type.Optional(Color),
  enabled: Type.Optional(Type.Boolean()),
  requiredApprovals: Type.Optional(RequiredApprovals),
});

export const UpdateEnvironmentBody = Type.Object({
  environmentId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  sortOrder: Type.Optional(Int32()),
  color: Type.Optional(Color),
  enabled: Type.Optional(Type.Boolean()),
  requiredApprovals: Type.Optional(RequiredApprovals),
});

export const EnvironmentIdBody = Type.Object({ environmentId: Id });
export const EnvironmentIdQuery = Type.Object({ environmentId: Id });
export const CreatedEnvironment = Type.Object({ environmentId: Id });
