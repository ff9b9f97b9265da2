/**
 * The receiving end of a filesystem-backend upload URL: `PUT /api/packagestore/blob/<token>`.
 * It behaves like an Azure SAS URL for one blob with Create permission: the signature is the
 * credential, expiry and tampering give 403, the first complete PUT wins and any later PUT gets
 * 403, and nothing can be read back.
 */
import type { Readable } from 'node:stream';
import { GantryError, toError, type Clock } from '../core/index.ts';
import type { PackagesStore } from '../store/index.ts';
import { isFilesystemBlobStore, type BlobStore } from './blob-store.ts';
import type { StagedFile } from './staging.ts';
import { discard } from './staging.ts';

export interface DirectUploadRequest {
  token: string;
  exp: string | undefined;
  sig: string | undefined;
  blobType: string | undefined;
  body: Readable;
}

/** 201 like Azure's Put Blob; refusals carry the status and a reason for the error body. */
export type DirectUploadResult = { status: 201 } | { status: 400 | 403; error: string };

interface Context {
  store: PackagesStore;
  blobs: BlobStore;
  clock: Clock;
  stage(source: Readable): Promise<StagedFile>;
}

const TOKEN = /^[A-Za-z0-9-]{1,100}$/;

export async function receiveDirectUpload(context: Context, request: DirectUploadRequest): Promise<DirectUploadResult> {
  const { store, blobs, clock } = context;
  if (!isFilesystemBlobStore(blobs)) {
    return { status: 403, error: 'This server does not receive package blobs; use the upload URL from negotiate' };
  }
  const exp = Number(request.exp);
  const blobKey = `pending/${request.token}`;
  if (
    !TOKEN.test(request.token) ||
    !Number.isSafeInteger(exp) ||
    !request.sig ||
    !blobs.isSignedUpload(blobKey, exp, request.sig)
  ) {
    return { status: 403, error: 'The upload URL signature is invalid' };
  }
  if (clock.now().getTime() >= exp * 1000) return { status: 403, error: 'The upload URL has expired' };
  if (request.blobType !== 'BlockBlob') return { status: 400, error: "Header 'x-ms-blob-type: BlockBlob' is required" };

  const pending = await store.getPendingUpload(request.token);
  if (!pending || pending.blobKey !== blobKey) return { status: 403, error: 'The upload URL is no longer valid' };
  // Claimed before the bytes arrive, so two concurrent PUTs cannot both write the one blob.
  if (!(await store.markPendingUploaded(pending.id, clock.now()))) {
    return { status: 403, error: 'A blob was already uploaded with this URL; it is good for one blob only' };
  }
  let staged: StagedFile | null = null;
  try {
    staged = await context.stage(request.body);
    await blobs.putFile(blobKey, staged.path);
    return { status: 201 };
  } catch (error) {
    await discard(staged);
    // A failed transfer created no blob, so the URL may be used again (as with Azure).
    await store.clearPendingUploaded(pending.id);
    if (error instanceof GantryError) return { status: 400, error: error.message };
    throw toError(error);
  }
}
