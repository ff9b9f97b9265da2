import { Type } from '@sinclair/typebox';
import { Description, Id, Name, Nullable, PageQuery } from '../../schemas.ts';

const ScriptLanguage = Type.Union([
  Type.Literal('bash'),
  Type.Literal('sh'),
  Type.Literal('python'),
  Type.Literal('powershell'),
]);
const RunMode = Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z][A-Za-z0-9_-]*$' });
const SupportedRunModes = Type.Array(RunMode, { minItems: 1, maxItems: 20 });
/** Scripts and property definitions can be long, but not unbounded. */
const Script = Type.String({ maxLength: 1_000_000 });
const PropertiesRaw = Type.String({ minLength: 1, maxLength: 1_000_000 });

export const StepTemplateSchema = Type.Object({
  stepTemplateId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  script: Type.String(),
  scriptLanguage: Type.String(),
  supportedRunModes: Type.Array(Type.String()),
  propertiesRaw: Type.String(),
});

export const ListStepTemplatesQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const StepTemplateList = Type.Object({
  stepTemplates: Type.Array(StepTemplateSchema),
  totalCount: Type.Integer(),
});
export const StepTemplateDetailsQuery = Type.Object({
  stepTemplateId: Type.Optional(Id),
  workspaceId: Type.Optional(Id),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export const CreateStepTemplateBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  script: Script,
  scriptLanguage: ScriptLanguage,
  supportedRunModes: Type.Optional(SupportedRunModes),
  propertiesRaw: Type.Optional(PropertiesRaw),
});

export const UpdateStepTemplateBody = Type.Object({
  stepTemplateId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  script: Type.Optional(Script),
  scriptLanguage: Type.Optional(ScriptLanguage),
  supportedRunModes: Type.Optional(SupportedRunModes),
  propertiesRaw: Type.Optional(PropertiesRaw),
});

export const StepTemplateIdBody = Type.Object({ stepTemplateId: Id });
export const CreatedStepTemplate = Type.Object({ stepTemplateId: Id });
