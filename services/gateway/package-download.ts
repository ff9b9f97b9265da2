// DownloadPackage: streams one package of the agent's own workspace in chunks of at most 64 KiB,
// with at most two chunks handed to grpc-js and not yet sent (its own buffer counts messages, 16
// of them, not bytes): a download the agent does not read holds ~128 KiB, never the package.
// How many run at once is capped per machine and for the whole gateway (DownloadSlots).
import type { Readable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { toError, type Logger } from '../core/index.ts';
import { grpcStatus } from './grpc-errors.ts';
import type { DownloadAgentBundleRequest, DownloadPackageRequest, PackageChunk } from './proto.ts';

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
export type BundleDownloadCall = grpc.ServerWritableStream<DownloadAgentBundleRequest, PackageChunk>;
type ChunkCall = grpc.ServerWritableStream<unknown, PackageChunk>;

/** Splits one source chunk into pieces of at most MAX_CHUNK_BYTES (views, no copy). */
export function* slices(chunk: Buffer): Generator<Buffer> {
  for (let offset = 0; offset < chunk.length; offset += MAX_CHUNK_BYTES)
    yield chunk.subarray(offset, offset + MAX_CHUNK_BYTES);
}

/** Chunks written to the call whose write has not completed (sent to the HTTP/2 stream). */
const MAX_CHUNKS_IN_FLIGHT = 2;

/**
 * Writes chunks to a call, waiting while MAX_CHUNKS_IN_FLIGHT are not sent yet; the wait ends
 * too when the call is cancelled or closed, so a vanished agent never leaves a download waiting.
 */
class ChunkWriter {
  #inFlight = 0;
  #wake: (() => void) | null = null;
  #ended = false;
  readonly #call: ChunkCall;
  readonly #end = (): void => {
    this.#ended = true;
    this.#wake?.();
  };

  constructor(call: ChunkCall) {
    this.#call = call;
    call.on('cancelled', this.#end);
    call.on('close', this.#end);
  }

  async write(data: Buffer): Promise<void> {
    this.#inFlight++;
    this.#call.write({ data }, () => {
      this.#inFlight--;
      this.#wake?.();
    });
    while (this.#inFlight >= MAX_CHUNKS_IN_FLIGHT && !this.#ended)
      await new Promise<void>((resolve) => (this.#wake = resolve));
    this.#wake = null;
  }

  dispose(): void {
    this.#call.off('cancelled', this.#end);
    this.#call.off('close', this.#end);
  }
}

/**
 * How many downloads run at once: at most `perMachine` for one machine (more are refused with
 * RESOURCE_EXHAUSTED: an agent downloads each package version once, a few at a time), and at most
 * `total` on this gateway (more wait their turn, first come first served, holding no bytes).
 */
export class DownloadSlots {
  readonly #perMachine: number;
  readonly #total: number;
  #running = 0;
  readonly #byMachine = new Map<string, number>();
  readonly #waiting: Array<() => void> = [];

  constructor(limits: { perMachine: number; total: number }) {
    this.#perMachine = limits.perMachine;
    this.#total = limits.total;
  }

  /** A slot for this machine's download (release it when done), or RESOURCE_EXHAUSTED. */
  async acquire(machineId: string, call: DownloadCall): Promise<() => void> {
    const held = this.#byMachine.get(machineId) ?? 0;
    if (held >= this.#perMachine)
      throw grpcStatus(
        grpc.status.RESOURCE_EXHAUSTED,
        `This machine already has ${held} package downloads in progress (at most ${this.#perMachine}); retry when one ends`,
      );
    this.#byMachine.set(machineId, held + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const left = (this.#byMachine.get(machineId) ?? 1) - 1;
      if (left > 0) this.#byMachine.set(machineId, left);
      else this.#byMachine.delete(machineId);
    };
    if (this.#running >= this.#total) {
      const granted = await new Promise<boolean>((resolve) => {
        const grant = (): void => {
          call.off('cancelled', cancel);
          resolve(true);
        };
        const cancel = (): void => {
          const index = this.#waiting.indexOf(grant);
          if (index !== -1) this.#waiting.splice(index, 1);
          resolve(false);
        };
        call.on('cancelled', cancel);
        this.#waiting.push(grant);
      });
      if (!granted) {
        release();
        throw grpcStatus(grpc.status.CANCELLED, 'The download was cancelled while it waited for its turn');
      }
    } else this.#running++;
    return () => {
      if (released) return;
      release();
      // The slot passes to the first waiting download, or is freed.
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    };
  }

  /** Downloads running now (for tests and logs). */
  get running(): number {
    return this.#running;
  }
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
  const writer = new ChunkWriter(call);
  try {
    for await (const chunk of stream) {
      const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
      for (const data of slices(buffer)) {
        if (cancelled) return;
        await writer.write(data);
      }
    }
  } catch (error) {
    if (cancelled) return;
    logger.error({ err: toError(error), packageId, version }, 'package stream failed');
    throw grpcStatus(grpc.status.UNAVAILABLE, 'Reading the package failed; retry the download');
  } finally {
    call.off('cancelled', onCancel);
    writer.dispose();
    stream.destroy();
  }
  if (!cancelled) call.end();
}

/** Streams bytes held in memory (the agent bundle) with the same chunking and backpressure. */
export async function streamBytes(bytes: Buffer, call: BundleDownloadCall): Promise<void> {
  let cancelled = false;
  const onCancel = (): void => {
    cancelled = true;
  };
  call.on('cancelled', onCancel);
  const writer = new ChunkWriter(call);
  try {
    for (const data of slices(bytes)) {
      if (cancelled) return;
      await writer.write(data);
    }
  } finally {
    call.off('cancelled', onCancel);
    writer.dispose();
  }
  if (!cancelled) call.end();
}
