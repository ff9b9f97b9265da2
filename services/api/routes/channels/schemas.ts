import { Type } from '@sinclair/typebox';
import { MAX_PRE_RELEASE_TAG_LENGTH, MAX_VERSION_RANGE_LENGTH } from '../../../domain/index.ts';
import { Description, Id, Name, Nullable } from '../../schemas.ts';

const VersionRange = Nullable(Type.String({ maxLength: MAX_VERSION_RANGE_LENGTH }));
const PreReleaseTag = Nullable(Type.String({ maxLength: MAX_PRE_RELEASE_TAG_LENGTH }));
const PackageId = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });

export const PackageRuleSchema = Type.Object({
  packageId: Type.String(),
  versionRange: Nullable(Type.String()),
  preReleaseTag: Nullable(Type.String()),
});

export const ChannelSchema = Type.Object({
  channelId: Id,
  projectId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  lifecycleId: Nullable(Id),
  isDefault: Type.Boolean(),
  versionRange: Nullable(Type.String()),
  preReleaseTag: Nullable(Type.String()),
  packageRules: Type.Array(PackageRuleSchema),
});

export const ChannelList = Type.Object({
  projectId: Id,
  channels: Type.Array(ChannelSchema),
  totalCount: Type.Integer(),
});
export const ProjectIdQuery = Type.Object({ projectId: Id });

const PackageRuleInput = Type.Object({
  packageId: PackageId,
  versionRange: Type.Optional(VersionRange),
  preReleaseTag: Type.Optional(PreReleaseTag),
});

const channelFields = {
  description: Type.Optional(Description),
  lifecycleId: Type.Optional(Nullable(Id)),
  isDefault: Type.Optional(Type.Boolean()),
  versionRange: Type.Optional(VersionRange),
  preReleaseTag: Type.Optional(PreReleaseTag),
  packageRules: Type.Optional(Nullable(Type.Array(PackageRuleInput, { maxItems: 200 }))),
};

export const CreateChannelBody = Type.Object({ projectId: Id, name: Name, ...channelFields });
export const UpdateChannelBody = Type.Object({ channelId: Id, name: Type.Optional(Name), ...channelFields });
export const ChannelIdBody = Type.Object({ channelId: Id });
export const CreatedChannel = Type.Object({ channelId: Id });
