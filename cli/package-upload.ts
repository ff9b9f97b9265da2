/**
 * Pushes one package file the way the server says (api-spec §4.6–4.7, contract §6): negotiate,
 * then either PUT the bytes to the signed URL (`x-ms-blob-type: BlockBlob`) and confirm, or send
 * the multipart form. The file is streamed from disk (never buffered), with a Content-Length
 * (Azure Blob Storage refuses chunked uploads), and its bytes are counted for the progress bar.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { GantryApiError, unwrap } from '../client/index.ts';
import { errorOfResponse, type Api } from './api.ts';
import { formatDuration } from './duration.ts';
import { UsageError } from './exit-codes.ts';
import { formatBytes, type Output } from './output.ts';

export type IfExists = 'fail' | 'ignore';

/** One pushed file as the JSON output shows it (cli/README.md). */
export interface PushResult {
  file: string;
  fileName: string;
  sizeBytes: number;
  mode: 'direct' | 'legacy' | null;
  result: 'uploaded' | 'exists';
}

/** The message the package store gives a package ID and version it already has (package-service.ts). */
const EXISTS_MESSAGE = 'this package ID and version already exist';

export function isAlreadyThere(error: unknown): boolean {
  return (
    error instanceof GantryApiError &&
    error.status === 400 &&
    (error.body?.validationErrors ?? []).some((v) => v.messages.includes(EXISTS_MESSAGE))
  );
}

/** The file's bytes as a stream, reporting each chunk as it is read by the sender. */
function fileStream(file: string, onBytes: (n: number) => void, before = '', after = ''): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let reader: AsyncIterator<Buffer> | null = null;
  let stage: 'before' | 'file' | 'after' | 'done' = before ? 'before' : 'file';
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (stage === 'before') {
        controller.enqueue(encoder.encode(before));
        stage = 'file';
        return;
      }
      if (stage === 'file') {
        reader ??= (createReadStream(file, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>)[
          Symbol.asyncIterator
        ]();
        const next = await reader.next();
        if (!next.done) {
          onBytes(next.value.length);
          controller.enqueue(new Uint8Array(next.value.buffer, next.value.byteOffset, next.value.length));
          return;
        }
        stage = after ? 'after' : 'done';
      }
      if (stage === 'after') {
        controller.enqueue(encoder.encode(after));
        stage = 'done';
        return;
      }
      controller.close();
    },
    async cancel() {
      await reader?.return?.();
    },
  });
}

/** An Azure Blob Storage refusal (XML with a <Code>) as the API's error shape. */
const blobStoreError = (status: number) => (text: string) => ({
  error: `The upload URL refused the file: ${/<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `HTTP ${status}`}`,
  errorcode: 3001,
  requestid: null,
});

export async function pushPackage(
  api: Api,
  out: Output,
  workspaceId: string,
  file: string,
  ifExists: IfExists,
): Promise<PushResult> {
  const fileName = path.basename(file);
  const info = await stat(file).catch(() => null);
  if (!info?.isFile()) throw new UsageError(`${file}: no such file`);
  const result: PushResult = { file, fileName, sizeBytes: info.size, mode: null, result: 'uploaded' };
  const exists = (error: unknown): PushResult => {
    if (ifExists === 'ignore' && isAlreadyThere(error)) {
      out.note(`${fileName}: already in the package store (--if-exists ignore)`);
      return { ...result, result: 'exists' };
    }
    throw error;
  };

  let negotiated;
  try {
    negotiated = unwrap(
      await api.client.POST('/api/packagestore/package/negotiate', {
        body: { WorkspaceId: workspaceId, FileName: fileName },
      }),
    );
  } catch (error) {
    return exists(error);
  }
  result.mode = negotiated.mode;
  const started = Date.now();
  const bar = out.progress(fileName, info.size);
  let sent = 0;
  const count = (n: number) => bar.update((sent += n));
  try {
    if (negotiated.mode === 'direct') {
      if (!negotiated.uploadUrl) throw new Error('negotiate answered direct without an uploadUrl');
      const response = await api.fetchUnauthenticated(negotiated.uploadUrl, {
        method: 'PUT',
        headers: {
          'x-ms-blob-type': 'BlockBlob',
          'content-length': String(info.size),
          'content-type': 'application/octet-stream',
        },
        body: fileStream(file, count),
        duplex: 'half',
      } as RequestInit);
      if (!response.ok) throw await errorOfResponse(response, blobStoreError(response.status));
      await response.body?.cancel();
      unwrap(
        await api.client.POST('/api/packagestore/package/confirm', {
          body: { WorkspaceId: workspaceId, FileName: fileName },
        }),
      );
    } else {
      await postMultipart(api, workspaceId, file, fileName, info.size, count);
    }
  } catch (error) {
    bar.finish('failed');
    return exists(error);
  }
  bar.finish(`uploaded ${formatBytes(info.size)} in ${formatDuration(Date.now() - started)} (${negotiated.mode})`);
  return result;
}

/**
 * The multipart form of api-spec §4.6: the field `workspaceId` first (so the server checks
 * everything before it stores a byte), then the file as `PackageFile`. The route streams its
 * body, so OpenAPI describes no request body for it; these two field names are the whole shape.
 */
async function postMultipart(
  api: Api,
  workspaceId: string,
  file: string,
  fileName: string,
  size: number,
  onBytes: (n: number) => void,
): Promise<void> {
  const boundary = `----gantry-${randomBytes(12).toString('hex')}`;
  const quoted = fileName.replace(/["\r\n\\]/g, '_');
  const before =
    `--${boundary}\r\nContent-Disposition: form-data; name="workspaceId"\r\n\r\n${workspaceId}\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="PackageFile"; filename="${quoted}"\r\n` +
    `Content-Type: application/octet-stream\r\n\r\n`;
  const after = `\r\n--${boundary}--\r\n`;
  const length = Buffer.byteLength(before) + size + Buffer.byteLength(after);
  unwrap(
    await api.streamingClient.POST('/api/packagestore/package', {
      body: fileStream(file, onBytes, before, after) as never,
      bodySerializer: (body: unknown) => body as BodyInit,
      headers: { 'Content-Type': `multipart/form-data; boundary=${boundary}`, 'Content-Length': String(length) },
      duplex: 'half',
    } as never),
  );
}
