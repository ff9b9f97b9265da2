/**
 * The only place that turns an error into an HTTP status and the spec's body
 * `{ error, errorcode, requestid }` (api-spec §7, contract §1). 5xx text is hidden and logged.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ErrorCode,
  GantryError,
  InsufficientPermissionsError,
  InvalidAccessTokenError,
  InvalidCredentialsError,
  InvalidParameterError,
  LimitExceededError,
  type ValidationError,
} from '../../core/index.ts';

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
  if (error instanceof LimitExceededError) return 409;
  if (error instanceof InvalidParameterError) return 400;
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
    return { property, messages: [e.message ?? 'is invalid'] };
  });
}

export function sendError(reply: FastifyReply, status: number, body: ErrorBody): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(body);
}

function describe(
  error: FastifyError | GantryError | Error,
  request: FastifyRequest,
): { status: number; body: ErrorBody } {
  const requestid = request.id;
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

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | GantryError | Error, request, reply) => {
    const { status, body } = describe(error, request);
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.info({ status, errorcode: body.errorcode }, 'request refused');
    return sendError(reply, status, body);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, {
      error: `Unknown route: ${request.method} ${request.url.split('?')[0] ?? ''}`,
      errorcode: ErrorCode.InvalidParameter,
      requestid: request.id,
    }),
  );
}
