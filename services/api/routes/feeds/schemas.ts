import { Type } from '@sinclair/typebox';
import { Id, Name, Nullable, PageQuery } from '../../schemas.ts';

export const FeedSchema = Type.Object({
  feedId: Id,
  workspaceId: Id,
  name: Type.String(),
  feedType: Type.String({ description: 'BuiltIn for the workspace package store, else NuGet, Maven, Http or Docker' }),
  url: Nullable(Type.String()),
  isBuiltin: Type.Boolean(),
  hasPassword: Type.Boolean({ description: 'Credentials are write-only: only their presence is shown' }),
});

const FeedTypeSchema = Type.Union([
  Type.Literal('NuGet'),
  Type.Literal('Maven'),
  Type.Literal('Http'),
  Type.Literal('Docker'),
]);
const Url = Type.String({ minLength: 1, maxLength: 2000 });
const Username = Nullable(Type.String({ maxLength: 500 }));
const Password = Nullable(Type.String({ maxLength: 10_000 }));

export const ListFeedsQuery = Type.Object({ workspaceId: Id, ...PageQuery });
export const FeedList = Type.Object({ feeds: Type.Array(FeedSchema), totalCount: Type.Integer() });

export const CreateFeedBody = Type.Object({
  workspaceId: Id,
  name: Name,
  feedType: FeedTypeSchema,
  url: Url,
  username: Type.Optional(Username),
  password: Type.Optional(Password),
});
export const CreatedFeed = Type.Object({ feedId: Id });

export const UpdateFeedBody = Type.Object({
  feedId: Id,
  name: Type.Optional(Name),
  feedType: Type.Optional(FeedTypeSchema),
  url: Type.Optional(Url),
  username: Type.Optional(Username),
  password: Type.Optional(Password),
});

export const FeedIdBody = Type.Object({ feedId: Id });
export const FeedIdQuery = Type.Object({ feedId: Id });
