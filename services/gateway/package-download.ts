// DownloadPackage: streams one package of the agent's own workspace in chunks of at most 64 KiB,
// waiting for 'drain' whenever the call's buffer is full (grpc-js counts messages, not bytes).
import type { Readable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { toError, type Logger } from '../core/index.ts';
import { grpcStatus } from './grpc-errors.ts';
import type { DownloadPackageRequest, PackageChunk } from './proto.ts';

/**
 * Where package bytes come from. The package service (services/packages/) is adapted to this in
 * services/main.ts; `null` means the workspace has no such package version. Scoping by
 * workspaceId is what keeps an agent to its own workspace's packages.
 */
export interface PackageSource {
  openPackage(workspaceId: string, packageId: string, version: string): Promise<{ stream: Readable } | null>;
}

export const MAX_CHUNK_BYTES = 64 * 1024;
const MAX_NAME_LENGTH = 500;

export type DownloadCall = grpc.ServerWritableStream<DownloadPackageRequest, PackageChunk>;

/** Splits one source chunk into pieces of at most MAX_CHUNK_BYTES (views, no copy). */
export function* slices(chunk: Buffer): Generator<Buffer> {
  for (let offset = 0; offset < chunk.length; offset += MAX_CHUNK_BYTES)
    yield chunk.subarray(offset, offset + MAX_CHUNK_BYTES);
}

// Resolves on 'drain', or when the call can no longer drain (cancelled or closed), so a vanished
// agent never leaves a download waiting forever.
function drainOrEnd(call: DownloadCall): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });
}

export async function streamPackage(
  source: PackageSource | null | undefined,
  workspaceId: string,
  call: DownloadCall,
  logger: Logger,
): Promise<void> {
  const { packageId, version } = call.request;
  const notFound = grpcStatus(
    grpc.status.NOT_FOUND,
    `Package ${packageId} version ${version} was not found in this machine's workspace`,
  );
  if (!source)
    throw grpcStatus(grpc.status.UNIMPLEMENTED, 'Package downloads are not configured on this control plane');
  if (packageId === '' || version === '' || packageId.length > MAX_NAME_LENGTH || version.length > MAX_NAME_LENGTH)
    throw notFound;
  const opened = await source.openPackage(workspaceId, packageId, version);
  if (!opened) throw notFound;
  const stream = opened.stream;
  let cancelled = false;
  const onCancel = (): void => {
    cancelled = true;
    stream.destroy();
  };
  call.on('cancelled', onCancel);
  try {
    for await (const chunk of stream) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      for (const data of slices(buffer)) {
        if (cancelled) return;
        if (!call.write({ data })) await drainOrEnd(call);
      }
    }
  } catch (error) {
    if (cancelled) return;
    logger.error({ err: toError(error), packageId, version }, 'package stream failed');
    throw grpcStatus(grpc.status.UNAVAILABLE, 'Reading the package failed; retry the download');
  } finally {
    call.off('cancelled', onCancel);
    stream.destroy();
  }
  if (!cancelled) call.end();
}
