import { Type } from '@sinclair/typebox';
import { ErrorAction } from '../../../core/index.ts';
import { Description, Id, Name, Nullable, OneOf } from '../../schemas.ts';

const IdList = Type.Array(Id, { maxItems: 1000 });
const TagSet = Type.Object({ tagIds: Type.Array(Id, { minItems: 1, maxItems: 100 }) });

export const ProjectStepSchema = Type.Object({
  projectStepId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  stepTemplateId: Id,
  sortOrder: Type.Integer(),
  runMode: Nullable(Type.String()),
  errorAction: Type.String(),
  disabled: Type.Boolean(),
  parallelMachines: Nullable(Type.Integer()),
  environments: Type.Array(Type.String()),
  machineIdFilter: Type.Array(Type.String()),
  machineTagFilter: Type.Array(Type.Object({ tagIds: Type.Array(Type.String()) })),
  propertiesJson: Type.String(),
  rollingGroupId: Nullable(Type.String()),
});

export const ProjectIdQuery = Type.Object({ projectId: Id });
export const ProjectStepList = Type.Object({ projectId: Id, steps: Type.Array(ProjectStepSchema) });

const PropertiesJson = (description?: string) =>
  Type.String({ minLength: 1, maxLength: 1_000_000, ...(description ? { description } : {}) });

export const CreateProjectStepBody = Type.Object({
  projectId: Id,
  name: Name,
  stepTemplateId: Id,
  // A Gantry extension: the spec fills properties in later with PUT; a client that sends them at
  // once had them dropped without a word.
  propertiesJson: Type.Optional(
    PropertiesJson('Gantry extension: the properties at once (as PUT /api/project/step), a JSON object string'),
  ),
});
export const CreatedProjectStep = Type.Object({ projectStepId: Id });

export const UpdateProjectStepBody = Type.Object({
  projectStepId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  runMode: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
  errorAction: Type.Optional(OneOf(ErrorAction)),
  disabled: Type.Optional(Type.Boolean()),
  parallelMachines: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100_000 }))),
  environments: Type.Optional(IdList),
  machineIdFilter: Type.Optional(IdList),
  machineTagFilter: Type.Optional(Type.Array(TagSet, { maxItems: 100 })),
  propertiesJson: Type.Optional(PropertiesJson()),
});

export const ProjectStepIdBody = Type.Object({ projectStepId: Id });
export const ReorderStepsBody = Type.Object({ projectId: Id, projectStepIds: IdList });
export const CloneProjectStepBody = Type.Object({
  projectStepId: Id,
  targetProjectId: Type.Optional(Id),
  name: Type.Optional(Name),
});
