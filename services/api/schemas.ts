/**
 * Schema building blocks shared by every route. Route folders keep their own schemas.ts; these
 * are the pieces that must be the same everywhere (IDs, paging, nullable strings, error body).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { MAX_TAKE } from '../core/index.ts';

/** An identifier: any non-empty string (IDs are opaque; an unknown one is a 400 from the domain). */
export const Id = Type.String({ minLength: 1, maxLength: 200 });

/** A display name: trimmed by the client, non-empty, bounded. */
export const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });

export const Description = Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]);

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const PageQuery = {
  skip: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  take: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_TAKE, default: 50 })),
};

export const ErrorBody = Type.Object(
  {
    error: Type.String(),
    errorcode: Type.Integer(),
    requestid: Nullable(Type.String()),
    validationErrors: Type.Optional(
      Type.Array(Type.Object({ property: Type.String(), messages: Type.Array(Type.String()) })),
    ),
    resourceUsageErrors: Type.Optional(
      Type.Array(Type.Object({ resource: Type.String(), limit: Type.Number(), current: Type.Number() })),
    ),
  },
  { $id: 'ErrorBody' },
);

/** The standard error responses every authenticated route documents in OpenAPI. */
export const errorResponses = {
  400: Type.Ref('ErrorBody'),
  401: Type.Ref('ErrorBody'),
};

/** An empty 200 body (spec: "Response 200: empty body"). */
export const Empty = Type.Null({ description: 'Empty body' });
