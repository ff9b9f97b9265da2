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
});

export const ListEnvironmentsQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const EnvironmentList = Type.Object({ environments: Type.Array(EnvironmentSchema), totalCount: Type.Integer() });

const Color = Nullable(Type.String({ maxLength: 50 }));

export const CreateEnvironmentBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  sortOrder: Type.Optional(Int32()),
  color: Type.Optional(Color),
  enabled: Type.Optional(Type.Boolean()),
});

export const UpdateEnvironmentBody = Type.Object({
  environmentId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  sortOrder: Type.Optional(Int32()),
  color: Type.Optional(Color),
  enabled: Type.Optional(Type.Boolean()),
});

export const EnvironmentIdBody = Type.Object({ environmentId: Id });
export const EnvironmentIdQuery = Type.Object({ environmentId: Id });
export const CreatedEnvironment = Type.Object({ environmentId: Id });
