/**
 * Schema building blocks shared by every route. Route folders keep their own schemas.ts; these
 * are the pieces that must be the same everywhere (IDs, paging, nullable strings, error body).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { ID_PATTERN, MAX_TAKE } from '../core/index.ts';

/**
 * An identifier: opaque, but shaped like every ID Gantry issues (core ID_PATTERN), so malformed
 * text is refused before any query; an unknown one is a 400 from the domain.
 */
export const Id = Type.String({ minLength: 1, maxLength: 200, pattern: ID_PATTERN });

/** An integer a PostgreSQL `integer` column holds. Every integer a request carries is bounded. */
export const Int32 = (options: { minimum?: number; maximum?: number; default?: number } = {}) =>
  Type.Integer({ minimum: -2_147_483_648, maximum: 2_147_483_647, ...options });

/** .NET ticks and change ticks as decimal text: exact beyond 2^53 (parsed with core parseTicks). */
export const TicksText = (description: string) => Type.String({ maxLength: 19, pattern: '^[0-9]*$', description });

/** A display name: trimmed by the client, non-empty, bounded. */
export const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });

export const Description = Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()]);

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** One of the values of a core vocabulary object (ErrorAction, DeploymentStatus …), as a string enum. */
export const OneOf = <T extends string>(values: Readonly<Record<string, T>>, options: { description?: string } = {}) =>
  Type.Unsafe<T>({ ...options, type: 'string', enum: Object.values(values) });

export const PageQuery = {
  skip: Type.Optional(Int32({ minimum: 0, default: 0 })),
  take: Type.Optional(Int32({ minimum: 1, maximum: MAX_TAKE, default: 50 })),
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

/**
 * `Idempotency-Key` (release create, deploy, promote): a retry with the same key within 24 h gets
 * the first answer instead of acting twice.
 */
export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Retries with the same key within 24 h return the first answer instead of acting again',
    }),
  ),
});
