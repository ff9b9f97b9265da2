import { Type } from '@sinclair/typebox';
import { Id, Name, Nullable, PageQuery } from '../../schemas.ts';

/** Bounded ID lists: a machine sits in a handful of environments, carries a handful of tags. */
const IdList = Type.Array(Id, { maxItems: 500 });

export const MachineEnvironmentSchema = Type.Object({ environmentId: Id, name: Type.String() });

export const MachineSchema = Type.Object({
  machineId: Id,
  workspaceId: Id,
  name: Type.String(),
  environments: Type.Array(MachineEnvironmentSchema),
  tagIds: Type.Array(Id),
  enabled: Type.Boolean(),
  status: Type.Union([Type.Literal('Pending'), Type.Literal('Online'), Type.Literal('Offline')]),
  lastSeenUtc: Nullable(Type.String({ format: 'date-time' })),
  agentVersion: Nullable(Type.String()),
  os: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  health: Type.Union(
    [Type.Literal('Pending'), Type.Literal('Online'), Type.Literal('Offline'), Type.Literal('Unhealthy')],
    {
      description:
        'Gantry extension: Unhealthy is online with too little free disk in the agent home or an agent older than supported',
    },
  ),
  healthReasons: Type.Array(Type.String(), { description: 'Gantry extension: why the health is not Online' }),
  interpreters: Nullable(
    Type.Array(Type.String(), { description: 'Gantry extension: bash, sh, python3, pwsh found on the agent PATH' }),
  ),
  freeDiskBytes: Nullable(Type.Integer({ description: "Gantry extension: bytes free in the agent's home" })),
  upgrade: Nullable(
    Type.Object(
      {
        version: Type.String(),
        state: Type.Union([
          Type.Literal('Requested'),
          Type.Literal('Started'),
          Type.Literal('Succeeded'),
          Type.Literal('Failed'),
        ]),
        message: Nullable(Type.String()),
        updatedUtc: Type.String({ format: 'date-time' }),
      },
      {
        description:
          'Gantry extension: the last upgrade asked of its agent (POST /api/machine/upgrade) and what became of it; Failed leaves the old agent running and says why',
      },
    ),
  ),
});

export const UpgradeMachinesBody = Type.Object({
  workspaceId: Id,
  machineIds: Type.Optional(Type.Array(Id, { maxItems: 1000 })),
  environmentId: Type.Optional(Id),
});
export const UpgradeMachinesResponse = Type.Object({
  version: Type.String({
    description: 'The agent version this control plane ships, which the agents are asked to run',
  }),
  machines: Type.Array(
    Type.Object({
      machineId: Id,
      name: Type.String(),
      agentVersion: Nullable(Type.String()),
      outcome: Type.Union(
        [Type.Literal('Requested'), Type.Literal('Queued'), Type.Literal('UpToDate'), Type.Literal('NotRegistered')],
        {
          description:
            'Requested: its connected agent is told now; Queued: told when it next connects; UpToDate: already runs the version; NotRegistered: no agent yet',
        },
      ),
    }),
  ),
});

export const ListMachinesQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const MachineList = Type.Object({ machines: Type.Array(MachineSchema), totalCount: Type.Integer() });

export const CreateMachineBody = Type.Object({
  workspaceId: Id,
  name: Name,
  environmentIds: Type.Optional(IdList),
  tagIds: Type.Optional(IdList),
});
const CaFingerprint = Type.Union([Type.String(), Type.Null()], {
  description:
    "SHA-256 fingerprint of the agent gateway's CA: give it to the agent as GANTRY_AGENT_CA_FINGERPRINT, and it refuses any other server. Null when the gateway serves plaintext (GANTRY_GRPC_INSECURE=1).",
});
export const CreatedMachine = Type.Object({
  machineId: Id,
  registrationToken: Type.String(),
  caFingerprint: CaFingerprint,
  installCommand: Type.String({
    description:
      'Gantry extension: the one line that installs the agent on the new machine as a systemd service (its token and the CA fingerprint inside)',
  }),
});

export const UpdateMachineBody = Type.Object({
  machineId: Id,
  name: Type.Optional(Name),
  tagIds: Type.Optional(IdList),
  enabled: Type.Optional(Type.Boolean()),
});

export const MachineIdBody = Type.Object({ machineId: Id });
export const MachineIdQuery = Type.Object({ machineId: Id });
export const RegistrationTokenResponse = Type.Object({
  registrationToken: Type.String(),
  caFingerprint: CaFingerprint,
});

export const MachineEnvironmentsResponse = Type.Object({
  machineId: Id,
  environments: Type.Array(MachineEnvironmentSchema),
});
export const SetMachineEnvironmentsBody = Type.Object({ machineId: Id, environmentIds: IdList });
export const MachineEnvironmentBody = Type.Object({ machineId: Id, environmentId: Id });

export const CreateEnrollmentKeyBody = Type.Object({
  workspaceId: Id,
  name: Name,
  environmentIds: Type.Array(Id, { minItems: 1, maxItems: 500 }),
  tagIds: Type.Optional(IdList),
  expiresInHours: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 24 * 366, description: 'Omitted: the key never expires (revoke it instead)' }),
  ),
});

export const EnrollmentKeySchema = Type.Object({
  enrollmentKeyId: Id,
  workspaceId: Id,
  name: Type.String(),
  environmentIds: Type.Array(Id),
  tagIds: Type.Array(Id),
  createdUtc: Type.String({ format: 'date-time' }),
  expiresUtc: Nullable(Type.String({ format: 'date-time' })),
  revokedUtc: Nullable(Type.String({ format: 'date-time' })),
  lastUsedUtc: Nullable(Type.String({ format: 'date-time' })),
  useCount: Type.Integer(),
});

export const CreatedEnrollmentKey = Type.Intersect([
  EnrollmentKeySchema,
  Type.Object({
    enrollmentKey: Type.String({ description: 'The secret, shown once (only its hash is stored)' }),
    installCommand: Type.String({ description: 'The one line that installs an agent enrolling itself with this key' }),
  }),
]);

export const EnrollmentKeyList = Type.Object({ enrollmentKeys: Type.Array(EnrollmentKeySchema) });
export const WorkspaceIdQuery = Type.Object({ workspaceId: Id });
export const EnrollmentKeyIdBody = Type.Object({ enrollmentKeyId: Id });
