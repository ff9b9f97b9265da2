/** Request and response schemas of the project-variable, workspace-variable and import routes. */
import { Type } from '@sinclair/typebox';
import { Description, Id, Name, Nullable, PageQuery } from '../../schemas.ts';

export const VariableTypeSchema = Type.Union([Type.Literal('Text'), Type.Literal('Sensitive')]);

// Values may be certificates or JSON documents; the bound keeps a request far below the body limit.
const TheValue = Type.String({ maxLength: 1_000_000 });
const IdList = Type.Array(Id, { maxItems: 500 });
const TagSets = Type.Array(Type.Object({ tagIds: Type.Array(Id, { minItems: 1, maxItems: 100 }) }), { maxItems: 100 });

/** Filters in requests: omitted = unchanged (PUT) or none (POST); null or [] = none. */
const filterFields = {
  environmentsFilter: Type.Optional(Nullable(IdList)),
  machineFilter: Type.Optional(Nullable(IdList)),
  tagFilter: Type.Optional(Nullable(TagSets)),
  stepFilter: Type.Optional(Nullable(IdList)),
  channelFilter: Type.Optional(Nullable(IdList)),
};

export const VariableValueSchema = Type.Object({
  variableValueId: Id,
  theValue: Nullable(Type.String({ description: 'null for Sensitive variables: their values are never returned' })),
  environmentsFilter: Type.Array(Type.String()),
  machineFilter: Type.Array(Type.String()),
  tagFilter: Type.Array(Type.Object({ tagIds: Type.Array(Type.String()) })),
  stepFilter: Type.Array(Type.String()),
  channelFilter: Type.Array(Type.String()),
});

export const VariableSchema = Type.Object({
  variableId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  variableType: VariableTypeSchema,
  values: Type.Array(VariableValueSchema),
});

export const ProjectIdQuery = Type.Object({ projectId: Id });
export const ProjectVariableList = Type.Object({ projectId: Id, variables: Type.Array(VariableSchema) });
export const WorkspaceVariablesQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const WorkspaceVariableList = Type.Object({
  workspaceId: Id,
  variables: Type.Array(VariableSchema),
  totalCount: Type.Integer(),
});

export const CreateProjectVariableBody = Type.Object({
  projectId: Id,
  name: Name,
  description: Type.Optional(Description),
  variableType: VariableTypeSchema,
});
export const CreateWorkspaceVariableBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  variableType: VariableTypeSchema,
});
export const UpdateVariableBody = Type.Object({
  variableId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  variableType: Type.Optional(VariableTypeSchema),
});
export const VariableIdBody = Type.Object({ variableId: Id });
export const CreatedVariable = Type.Object({ variableId: Id });

export const CreateValueBody = Type.Object({ variableId: Id, theValue: TheValue, ...filterFields });
export const UpdateValueBody = Type.Object({ variableValueId: Id, theValue: Type.Optional(TheValue), ...filterFields });
export const ValueIdBody = Type.Object({ variableValueId: Id });
export const CreatedValue = Type.Object({ variableValueId: Id });

export const ImportedVariableList = Type.Object({
  projectId: Id,
  workspaceVariables: Type.Array(
    Type.Object({ variableId: Id, name: Type.String(), variableType: VariableTypeSchema }),
  ),
});
export const SetImportsBody = Type.Object({ projectId: Id, variableIds: IdList });
export const ImportBody = Type.Object({ projectId: Id, variableId: Id });
