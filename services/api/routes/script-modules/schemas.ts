import { Type } from '@sinclair/typebox';
import { Description, Id, Name, Nullable, PageQuery } from '../../schemas.ts';

const ScriptLanguage = Type.Union([
  Type.Literal('bash'),
  Type.Literal('sh'),
  Type.Literal('python'),
  Type.Literal('powershell'),
]);
const Script = Type.String({ maxLength: 1_000_000 });

const summary = {
  scriptModuleId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  scriptLanguage: Type.String(),
};

/** Lists leave the script out: it can be large, and /details returns it. */
export const ScriptModuleSummary = Type.Object(summary);
export const ScriptModuleSchema = Type.Object({ ...summary, script: Type.String() });

export const ListScriptModulesQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const ScriptModuleList = Type.Object({
  scriptModules: Type.Array(ScriptModuleSummary),
  totalCount: Type.Integer(),
});

export const CreateScriptModuleBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  script: Script,
  scriptLanguage: ScriptLanguage,
});
export const CreatedScriptModule = Type.Object({ scriptModuleId: Id });

export const UpdateScriptModuleBody = Type.Object({
  scriptModuleId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  script: Type.Optional(Script),
  scriptLanguage: Type.Optional(ScriptLanguage),
});

export const ScriptModuleIdBody = Type.Object({ scriptModuleId: Id });
export const ScriptModuleIdQuery = Type.Object({ scriptModuleId: Id });

export const ProjectIdQuery = Type.Object({ projectId: Id });
export const ProjectScriptModules = Type.Object({
  projectId: Id,
  scriptModules: Type.Array(Type.Object({ scriptModuleId: Id, name: Type.String(), scriptLanguage: Type.String() })),
});
export const SetProjectScriptModulesBody = Type.Object({
  projectId: Id,
  scriptModuleIds: Type.Array(Id, { maxItems: 500 }),
});
export const ProjectScriptModuleBody = Type.Object({ projectId: Id, scriptModuleId: Id });
