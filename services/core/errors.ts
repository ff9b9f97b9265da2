/**
 * The spec's error vocabulary (api-spec §7.2). Domain and engine code throw these; exactly one
 * place (services/api/plugins/errors.ts) turns them into HTTP statuses and bodies.
 */
export const ErrorCode = {
  UnknownError: 1001,
  InvalidAccessToken: 2001,
  InvalidCredentials: 2002,
  InsufficientPermissions: 2003,
  InvalidParameter: 3001,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface ValidationError {
  property: string;
  messages: string[];
}

export interface ResourceUsageError {
  resource: string;
  limit: number;
  current: number;
}

export class GantryError extends Error {
  readonly errorcode: ErrorCode;
  constructor(message: string, errorcode: ErrorCode, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.errorcode = errorcode;
  }
}

/** Bad input, including unknown, deleted or foreign identifiers (the spec answers those with 400, not 404). */
export class InvalidParameterError extends GantryError {
  readonly validationErrors: ValidationError[] | undefined;
  constructor(message: string, validationErrors?: ValidationError[]) {
    super(message, ErrorCode.InvalidParameter);
    this.validationErrors = validationErrors;
  }
}

export class InvalidCredentialsError extends GantryError {
  constructor(message = 'Invalid credentials') {
    super(message, ErrorCode.InvalidCredentials);
  }
}

export class InvalidAccessTokenError extends GantryError {
  constructor(message = 'Invalid access token') {
    super(message, ErrorCode.InvalidAccessToken);
  }
}

export class InsufficientPermissionsError extends GantryError {
  constructor(message: string) {
    super(message, ErrorCode.InsufficientPermissions);
  }
}

/** A usage limit (organization settings) would be exceeded: 409 with resourceUsageErrors. */
export class LimitExceededError extends GantryError {
  readonly resourceUsageErrors: ResourceUsageError[];
  constructor(message: string, resourceUsageErrors: ResourceUsageError[]) {
    super(message, ErrorCode.InvalidParameter);
    this.resourceUsageErrors = resourceUsageErrors;
  }
}

/** The request collides with one still in progress (the same Idempotency-Key): 409, retry later. */
export class ConflictError extends GantryError {
  constructor(message: string) {
    super(message, ErrorCode.InvalidParameter);
  }
}

/**
 * A signed URL that does not grant this request (forged, expired, or already used): 403, as an
 * Azure SAS URL answers, since the signature is the only credential such a request carries.
 */
export class SignatureRefusedError extends GantryError {
  constructor(message: string) {
    super(message, ErrorCode.InvalidParameter);
  }
}

/** Normalises anything thrown into an Error, so no caller writes `catch (e: any)`. */
export function toError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}

/** Shorthand for the most common refusal: an identifier that is unknown in the caller's scope. */
export function unknownId(property: string): InvalidParameterError {
  return new InvalidParameterError(`Invalid ${property}: not found`, [{ property, messages: ['not found'] }]);
}
