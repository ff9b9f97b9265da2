/**
 * The CLI's exit codes: one per outcome a pipeline must tell apart (a failed deployment is not a
 * timeout, a refused request is not an unreachable server). Everything that ends the process
 * with a code other than 0 goes through `exitCodeOf`.
 */
import { GantryApiError } from '../client/index.ts';

export const ExitCode = {
  Success: 0,
  /** A deployment ended Failed. */
  DeploymentFailed: 1,
  /** Bad usage (unknown option, missing argument) or a request the API refused (4xx). */
  Usage: 2,
  /** --timeout elapsed before the deployments ended. */
  TimedOut: 3,
  /** A deployment ended Cancelled (by someone else, or by --cancel-on-timeout: then TimedOut wins). */
  Cancelled: 4,
  /** 401: wrong credentials (errorcode 2001/2002) or a missing role (2003). */
  AuthenticationRefused: 5,
  /** The server could not be reached, or answered 5xx after the retries. */
  Unreachable: 6,
  /** An unexpected error inside the CLI itself (a bug): sysexits' EX_SOFTWARE, so CI never reads it as an outcome. */
  Internal: 70,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A mistake in how the CLI was called, found before or without asking the server. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The server could not be reached (connection refused, DNS, reset) or kept answering 5xx. */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

/** Ends the process with `code` after the message was shown (deployment outcomes). */
export class ExitWith extends Error {
  override name = 'ExitWith';
  readonly code: ExitCode;
  constructor(code: ExitCode, message: string) {
    super(message);
    this.code = code;
  }
}

export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof ExitWith) return error.code;
  if (error instanceof UsageError) return ExitCode.Usage;
  if (error instanceof UnreachableError) return ExitCode.Unreachable;
  if (error instanceof GantryApiError) {
    if (error.status === 401 || error.status === 403) return ExitCode.AuthenticationRefused;
    if (error.status >= 500) return ExitCode.Unreachable;
    return ExitCode.Usage;
  }
  return ExitCode.Internal;
}
