import { Type } from '@sinclair/typebox';
import { Description, Id, Name, Nullable, PageQuery } from '../../schemas.ts';

export const ProgressRequirementSchema = Type.Union([
  Type.Literal('AllMustComplete'),
  Type.Literal('MinimumNumberToComplete'),
  Type.Literal('OptionalPhase'),
]);
export const ErrorModeSchema = Type.Union([Type.Literal('NoErrorsNoWarnings'), Type.Literal('NoErrorsAllowWarnings')]);
export const HowToTriggerSchema = Type.Union([Type.Literal('Automatic'), Type.Literal('Manual')]);

/** Bounds that keep one request small: a lifecycle is a handful of phases of a handful of environments. */
const MAX_PHASES = 100;
const MAX_PHASE_ENVIRONMENTS = 200;

export const PhaseEnvironmentSchema = Type.Object({
  environmentId: Id,
  environmentName: Type.String(),
  howToTrigger: HowToTriggerSchema,
  /** Gantry extension (issue #15): present only when the phase environment requires approvals. */
  requiredApprovals: Type.Optional(Type.Integer()),
});

export const PhaseSchema = Type.Object({
  phaseId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  sortOrder: Type.Integer(),
  progressRequirement: ProgressRequirementSchema,
  progressRequirementErrorMode: ErrorModeSchema,
  progressRequirementCount: Type.Integer(),
  environments: Type.Array(PhaseEnvironmentSchema),
});

export const LifecycleSchema = Type.Object({
  lifecycleId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  phases: Type.Array(PhaseSchema),
});

export const LifecycleList = Type.Object({ lifecycles: Type.Array(LifecycleSchema), totalCount: Type.Integer() });
export const ListLifecyclesQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const LifecycleIdQuery = Type.Object({ lifecycleId: Id });
export const LifecycleIdBody = Type.Object({ lifecycleId: Id });
export const CreatedLifecycle = Type.Object({ lifecycleId: Id });

/** Approvals a phase environment requires (issue #15); 0 clears it. Same bound as an environment's. */
const RequiredApprovals = Type.Integer({ minimum: 0, maximum: 10 });
const PhaseEnvironmentInput = Type.Object({
  environmentId: Id,
  howToTrigger: Type.Optional(HowToTriggerSchema),
  requiredApprovals: Type.Optional(RequiredApprovals),
});
const PhaseEnvironmentsInput = Type.Array(PhaseEnvironmentInput, { maxItems: MAX_PHASE_ENVIRONMENTS });
const Count = Type.Integer({ minimum: 0, maximum: 10_000 });

const phaseFields = {
  description: Type.Optional(Description),
  progressRequirement: Type.Optional(ProgressRequirementSchema),
  progressRequirementErrorMode: Type.Optional(ErrorModeSchema),
  progressRequirementCount: Type.Optional(Count),
  environments: Type.Optional(PhaseEnvironmentsInput),
};

const PhaseInput = Type.Object({ name: Name, ...phaseFields });
/** On PUT a phase may carry its phaseId, to keep it while the list is replaced. */
const PhaseReplaceInput = Type.Object({ phaseId: Type.Optional(Id), name: Name, ...phaseFields });

export const CreateLifecycleBody = Type.Object({
  workspaceId: Id,
  name: Name,
  description: Type.Optional(Description),
  phases: Type.Optional(Type.Array(PhaseInput, { maxItems: MAX_PHASES })),
});

export const UpdateLifecycleBody = Type.Object({
  lifecycleId: Id,
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  phases: Type.Optional(Type.Array(PhaseReplaceInput, { maxItems: MAX_PHASES })),
});

export const CreatePhaseBody = Type.Object({ lifecycleId: Id, name: Name, ...phaseFields });
export const CreatedPhase = Type.Object({ phaseId: Id });

export const UpdatePhaseBody = Type.Object({
  phaseId: Id,
  name: Type.Optional(Name),
  ...phaseFields,
  sortOrder: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
});

export const PhaseIdBody = Type.Object({ phaseId: Id });
export const SetPhaseEnvironmentBody = Type.Object({
  phaseId: Id,
  environmentId: Id,
  howToTrigger: Type.Optional(HowToTriggerSchema),
  requiredApprovals: Type.Optional(RequiredApprovals),
});
export const PhaseEnvironmentBody = Type.Object({ phaseId: Id, environmentId: Id });
