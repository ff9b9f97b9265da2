/**
 * The only place that turns an error into an HTTP status and the spec's body
 * `{ error, errorcode, requestid }` (api-spec §7, contract §1). 5xx text is hidden and logged.
 */
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ConflictError,
  ErrorCode,
  ID_PATTERN,
  GantryError,
  InsufficientPermissionsError,
  InvalidAccessTokenError,
  InvalidCredentialsError,
  InvalidParameterError,
  LimitExceededError,
  SignatureRefusedError,
  type ValidationError,
} from '../../core/index.ts';
import { isDatabaseUnavailable } from '../../domain/index.ts';

interface ErrorBody {
  error: string;
  errorcode: number;
  requestid: string | null;
  validationErrors?: ValidationError[];
  resourceUsageErrors?: LimitExceededError['resourceUsageErrors'];
}

function statusOf(error: GantryError): number {
  if (error instanceof InvalidCredentialsError || error instanceof InvalidAccessTokenError) return 401;
  if (error instanceof InsufficientPermissionsError) return 401;
  if (error instanceof LimitExceededError || error instanceof ConflictError) return 409;
  if (error instanceof InvalidParameterError) return 400;
  if (error instanceof SignatureRefusedError) return 403;
  return 500;
}

interface AjvError {
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

/** Fastify/Ajv schema errors → the spec's validationErrors (property path + messages). */
function fromSchemaErrors(errors: AjvError[], context: string | undefined): ValidationError[] {
  return errors.map((e) => {
    const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
    const missing = typeof e.params.missingProperty === 'string' ? e.params.missingProperty : '';
    const property = [path, missing].filter(Boolean).join('.') || (context ?? 'body');
    // Ajv would print the ID pattern itself; a person needs to know it is not an ID.
    const message = e.params.pattern === ID_PATTERN ? 'is not a valid identifier' : (e.message ?? 'is invalid');
    return { property, messages: [message] };
  });
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

/** Seconds a client should wait before retrying while the database is unavailable. */
const RETRY_AFTER_SECONDS = 5;

/** @fastify/busboy's own words for a multipart body it cannot parse (it sets no code). */
const MALFORMED_MULTIPART =
  /^(Unexpected end of (multipart data|form|file)|Malformed part header|Multipart: Boundary not found|Unsupported Content-Type\.)/;

function describe(
  error: FastifyError | GantryError | Error,
  request: FastifyRequest,
): { status: number; body: ErrorBody; retryAfterSeconds?: number } {
  const requestid = request.id;
  if (isDatabaseUnavailable(error)) {
    return {
      status: 503,
      body: { error: 'The database is unavailable; retry shortly', errorcode: ErrorCode.UnknownError, requestid },
      retryAfterSeconds: RETRY_AFTER_SECONDS,
    };
  }
  if (error instanceof GantryError) {
    const status = statusOf(error);
    const body: ErrorBody = {
      error: status >= 500 ? 'Internal server error' : error.message,
      errorcode: status >= 500 ? ErrorCode.UnknownError : error.errorcode,
      // The spec shows requestid null for bad credentials: nothing about the caller is known yet.
      requestid: error instanceof InvalidCredentialsError ? null : requestid,
    };
    if (error instanceof InvalidParameterError && error.validationErrors)
      body.validationErrors = error.validationErrors;
    if (error instanceof LimitExceededError) body.resourceUsageErrors = error.resourceUsageErrors;
    return { status, body };
  }
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    const validationErrors = fromSchemaErrors(fastifyError.validation, fastifyError.validationContext);
    const first = validationErrors[0];
    const where = fastifyError.validationContext === 'querystring' ? 'query parameter' : 'body property';
    return {
      status: 400,
      body: {
        error: first ? `Invalid ${where} '${first.property}': ${first.messages.join('; ')}` : 'Invalid request',
        errorcode: ErrorCode.InvalidParameter,
        requestid,
        validationErrors,
      },
    };
  }
  if (fastifyError.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return {
      status: 415,
      body: {
        error: 'Unsupported Content-Type: this endpoint takes application/json',
        errorcode: ErrorCode.InvalidParameter,
        requestid,
      },
    };
  }
  if (fastifyError.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return {
      status: 400,
      body: {
        error: 'The request body is larger than this endpoint accepts',
        errorcode: ErrorCode.InvalidParameter,
        requestid,
      },
    };
  }
  if (MALFORMED_MULTIPART.test(error.message) || fastifyError.code?.startsWith('FST_INVALID_MULTIPART')) {
    return {
      status: 400,
      body: { error: `Malformed multipart body: ${error.message}`, errorcode: ErrorCode.InvalidParameter, requestid },
    };
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    // Malformed JSON, empty JSON body, body too large…: Fastify's own client errors.
    const message =
      fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError
        ? `Malformed JSON: ${error.message}`
        : error.message;
    return { status, body: { error: message, errorcode: ErrorCode.InvalidParameter, requestid } };
  }
  return { status: 500, body: { error: 'Internal server error', errorcode: ErrorCode.UnknownError, requestid } };
}

/** A route nothing matched: the dashboard's own page for a browser, or undefined for the API's 404. */
export type PageNotFound = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> | undefined;

export function registerErrorHandling(app: FastifyInstance, options: { pageNotFound?: PageNotFound } = {}): void {
  app.setErrorHandler((error: FastifyError | GantryError | Error, request, reply) => {
    const { status, body, retryAfterSeconds } = describe(error, request);
    if (status === 503) request.log.warn({ err: error }, 'request refused: database unavailable');
    else if (status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status, errorcode: body.errorcode }, 'request refused');
    if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
    return sendError(reply, status, body);
  });
  app.setNotFoundHandler(
    (request, reply) =>
      options.pageNotFound?.(request, reply) ??
      sendError(reply, 404, {
        error: `Unknown route: ${request.method} ${request.url.split('?')[0] ?? ''}`,
        errorcode: ErrorCode.InvalidParameter,
        requestid: request.id,
      }),
  );
}

/**
 * Errors Fastify raises before routing (a path that is not valid percent-encoded UTF-8): the
 * spec's body, like every other error.
 */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  void sendError(reply, 400, {
    error: `Malformed request: ${error.message}`,
    errorcode: ErrorCode.InvalidParameter,
    requestid: request.id,
  });
}

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (a malformed request line, a
 * header too large, a bad method): answered on the raw socket in the spec's body shape, then
 * the connection is closed (the parser cannot tell where the next request would start).
 */
export function clientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const timeout = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const body = JSON.stringify({
    error: timeout
      ? 'Request timeout'
      : `Malformed HTTP request: ${HTTP_PARSER_MESSAGES[error.code ?? ''] ?? 'unreadable request'}`,
    errorcode: ErrorCode.InvalidParameter,
    requestid: null,
  });
  socket.end(
    `HTTP/1.1 ${timeout ? '408 Request Timeout' : '400 Bad Request'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Connection: close\r\n\r\n' +
      body,
  );
}

const HTTP_PARSER_MESSAGES: Record<string, string> = {
  HPE_HEADER_OVERFLOW: 'request header fields too large',
  HPE_INVALID_METHOD: 'invalid method',
  HPE_INVALID_URL: 'invalid request target',
  HPE_INVALID_VERSION: 'invalid HTTP version',
  HPE_INVALID_HEADER_TOKEN: 'invalid header',
  HPE_INVALID_CONSTANT: 'malformed request line',
  HPE_INVALID_CHUNK_SIZE: 'invalid chunk size',
  HPE_UNEXPECTED_CONTENT_LENGTH: 'conflicting Content-Length',
  HPE_INVALID_CONTENT_LENGTH: 'invalid Content-Length',
  HPE_INVALID_TRANSFER_ENCODING: 'invalid Transfer-Encoding',
};
