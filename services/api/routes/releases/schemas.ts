import { Type } from '@sinclair/typebox';
import { Id, Nullable, PageQuery } from '../../schemas.ts';

/** Package ID → SemVer version. A map, so the input normalization never renames its keys. */
const PackageVersions = Type.Record(Type.String({ maxLength: 300 }), Type.String({ maxLength: 300 }), {
  maxProperties: 500,
});

export const CreateReleaseBody = Type.Object({
  // Validity (SemVer 2.0.0, as written) is the domain's rule, so a bad version names the field.
  version: Type.String({ maxLength: 300 }),
  projectId: Id,
  channelName: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
  ignoreDefaultChannel: Type.Optional(Nullable(Type.Boolean())),
  notes: Type.Optional(Nullable(Type.String({ maxLength: 100_000 }))),
  packageVersions: Type.Optional(Nullable(PackageVersions)),
});
export const CreatedRelease = Type.Object({ releaseId: Id });

export const ListReleasesQuery = Type.Object({ projectId: Id, ...PageQuery });

const releaseFields = {
  releaseId: Id,
  projectId: Id,
  version: Type.String(),
  channelName: Nullable(Type.String()),
  notes: Nullable(Type.String()),
  packageVersions: Type.Record(Type.String(), Type.String()),
  createdUtc: Type.String({ format: 'date-time' }),
};
export const ReleaseSchema = Type.Object(releaseFields);
export const ReleaseList = Type.Object({ releases: Type.Array(ReleaseSchema), totalCount: Type.Integer() });

export const ReleaseDetailsQuery = Type.Object({
  releaseId: Type.Optional(Id),
  projectId: Type.Optional(Id),
  version: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
});

const TagSets = Type.Array(Type.Object({ tagIds: Type.Array(Type.String()) }));
const Strings = Type.Array(Type.String());

const PhaseEnvironment = Type.Object({
  environmentId: Type.String(),
  environmentName: Type.String(),
  howToTrigger: Type.String(),
});

const SnapshotSchema = Type.Object({
  project: Type.Object({ projectId: Type.String(), name: Type.String(), workspaceId: Type.String() }),
  channel: Nullable(Type.Object({ channelId: Type.String(), name: Type.String() })),
  lifecycle: Nullable(
    Type.Object({
      lifecycleId: Type.String(),
      name: Type.String(),
      phases: Type.Array(
        Type.Object({
          phaseId: Type.String(),
          name: Type.String(),
          sortOrder: Type.Integer(),
          progressRequirement: Type.String(),
          progressRequirementErrorMode: Type.String(),
          progressRequirementCount: Type.Integer(),
          environments: Type.Array(PhaseEnvironment),
        }),
      ),
    }),
  ),
  packages: Type.Array(
    Type.Object({
      packageId: Type.String(),
      version: Type.String(),
      sha256: Type.String(),
      sizeBytes: Type.Integer(),
      type: Type.String(),
    }),
  ),
  steps: Type.Array(
    Type.Object({
      stepId: Type.String(),
      name: Type.String(),
      sortOrder: Type.Integer(),
      errorAction: Type.String(),
      disabled: Type.Boolean(),
      parallelMachines: Nullable(Type.Integer()),
      environmentIds: Strings,
      machineIdFilter: Strings,
      machineTagFilter: TagSets,
      rollingGroupId: Nullable(Type.String()),
      properties: Type.Record(Type.String(), Type.String()),
      template: Type.Object({
        stepTemplateId: Type.String(),
        name: Type.String(),
        script: Type.String(),
        scriptLanguage: Type.String(),
        properties: Type.Array(
          Type.Object({
            Id: Type.String(),
            Name: Type.String(),
            DefaultValue: Nullable(Type.String()),
            ControlType: Type.String(),
          }),
        ),
      }),
      packageIds: Strings,
    }),
  ),
  rollingGroups: Type.Array(
    Type.Object({
      rollingGroupId: Type.String(),
      name: Type.String(),
      windowSize: Type.Integer(),
      machineOrder: Type.String(),
      machineOrderTagIds: Strings,
      waitBetweenMachineGroups: Type.Boolean(),
      onMachineFailure: Type.String(),
      onMemberFailure: Type.String(),
      onNoTargets: Type.String(),
      memberStepIds: Strings,
    }),
  ),
  variables: Type.Array(
    Type.Object({
      variableId: Type.String(),
      name: Type.String(),
      variableType: Type.String(),
      source: Type.String(),
      // No ciphertext here: a Sensitive value is null on the wire (contract §3).
      values: Type.Array(
        Type.Object({
          value: Nullable(Type.String()),
          environmentsFilter: Strings,
          machineFilter: Strings,
          tagFilter: TagSets,
          stepFilter: Strings,
          channelFilter: Strings,
        }),
      ),
    }),
  ),
  scriptModules: Type.Array(
    Type.Object({
      scriptModuleId: Type.String(),
      name: Type.String(),
      script: Type.String(),
      scriptLanguage: Type.String(),
    }),
  ),
});

const Availability = {
  environmentId: Type.String(),
  environmentName: Type.String(),
  available: Type.Boolean(),
  reason: Nullable(Type.String()),
};

const ProgressionSchema = Type.Object({
  phases: Nullable(
    Type.Array(
      Type.Object({
        phaseId: Type.String(),
        name: Type.String(),
        sortOrder: Type.Integer(),
        reached: Type.Boolean(),
        complete: Type.Boolean(),
        environments: Type.Array(Type.Object({ ...Availability, howToTrigger: Nullable(Type.String()) })),
      }),
    ),
  ),
  environments: Type.Array(Type.Object(Availability)),
});

export const ReleaseDetailsSchema = Type.Object({
  ...releaseFields,
  channelId: Nullable(Type.String()),
  snapshot: SnapshotSchema,
  progression: ProgressionSchema,
});
