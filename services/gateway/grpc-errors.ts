// gRPC statuses the gateway answers with. Across the process boundary errors are data
// ({ code, details }); the agent matches on the code (UNAUTHENTICATED stops it, UNAVAILABLE retries).
import * as grpc from '@grpc/grpc-js';

export interface GrpcStatus extends Partial<grpc.StatusObject> {
  code: grpc.status;
  details: string;
}

export function grpcStatus(code: grpc.status, details: string): GrpcStatus {
  return { code, details, metadata: new grpc.Metadata() };
}

export function isGrpcStatus(value: unknown): value is GrpcStatus {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { code?: unknown }).code === 'number' &&
    typeof (value as { details?: unknown }).details === 'string'
  );
}

/** Anything that is not already a status becomes UNAVAILABLE: the agent retries, the cause is logged, not sent. */
export function toGrpcStatus(error: unknown): GrpcStatus {
  return isGrpcStatus(error)
    ? error
    : grpcStatus(grpc.status.UNAVAILABLE, 'The control plane could not handle the request; retry later');
}
