import { Type } from '@sinclair/typebox';
import { Id, Name, PageQuery } from '../../schemas.ts';

const CloudAccountTypeSchema = Type.Union([Type.Literal('Azure'), Type.Literal('Aws'), Type.Literal('Gcp')]);

/** Free-form per type (e.g. Azure: subscriptionId, tenantId, clientId, clientSecret). */
const Config = Type.Object(
  {},
  {
    additionalProperties: true,
    maxProperties: 200,
    description: 'Account settings; secret-looking properties are write-only',
  },
);

export const CloudAccountSchema = Type.Object({
  cloudAccountId: Id,
  workspaceId: Id,
  name: Type.String(),
  type: Type.String(),
  config: Type.Object({}, { additionalProperties: true, description: 'Secret-looking properties are null' }),
});

export const ListCloudAccountsQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const CloudAccountList = Type.Object({
  cloudAccounts: Type.Array(CloudAccountSchema),
  totalCount: Type.Integer(),
});

export const CreateCloudAccountBody = Type.Object({
  workspaceId: Id,
  name: Name,
  type: CloudAccountTypeSchema,
  config: Config,
});
export const CreatedCloudAccount = Type.Object({ cloudAccountId: Id });

export const UpdateCloudAccountBody = Type.Object({
  cloudAccountId: Id,
  name: Type.Optional(Name),
  type: Type.Optional(CloudAccountTypeSchema),
  config: Type.Optional(Config),
});

export const CloudAccountIdBody = Type.Object({ cloudAccountId: Id });
export const CloudAccountIdQuery = Type.Object({ cloudAccountId: Id });
