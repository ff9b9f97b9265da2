/**
 * The receiving end of a filesystem-backend upload URL: `PUT /api/packagestore/blob/<token>`.
 * It behaves like an Azure SAS URL for one blob with Create permission: the signature is the
 * credential, expiry and tampering give 403, the first complete PUT wins and any later PUT gets
 * 403, and nothing can be read back. Refusals are the core errors (SignatureRefusedError: 403).
 */
import type { Readable } from 'node:stream';
import { InvalidParameterError, SignatureRefusedError, type Clock } from '../core/index.ts';
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

interface Context {
  store: PackagesStore;
  blobs: BlobStore;
  clock: Clock;
  stage(source: Readable): Promise<StagedFile>;
}

const TOKEN = /^[A-Za-z0-9-]{1,100}$/;

/** Stores the body as the pending blob (Azure's Put Blob answers 201), or throws why not. */
export async function receiveDirectUpload(context: Context, request: DirectUploadRequest): Promise<void> {
  const { store, blobs, clock } = context;
  if (!isFilesystemBlobStore(blobs)) {
    throw new SignatureRefusedError('This server does not receive package blobs; use the upload URL from negotiate');
  }
  const exp = Number(request.exp);
  const blobKey = `pending/${request.token}`;
  if (
    !TOKEN.test(request.token) ||
    !Number.isSafeInteger(exp) ||
    !request.sig ||
    !blobs.isSignedUpload(blobKey, exp, request.sig)
  ) {
    throw new SignatureRefusedError('The upload URL signature is invalid');
  }
  if (clock.now().getTime() >= exp * 1000) throw new SignatureRefusedError('The upload URL has expired');
  if (request.blobType !== 'BlockBlob') {
    throw new InvalidParameterError("Header 'x-ms-blob-type: BlockBlob' is required", [
      { property: 'x-ms-blob-type', messages: ['must be BlockBlob'] },
    ]);
  }

  const pending = await store.getPendingUpload(request.token);
  if (!pending || pending.blobKey !== blobKey) throw new SignatureRefusedError('The upload URL is no longer valid');
  // Claimed before the bytes arrive, so two concurrent PUTs cannot both write the one blob.
  if (!(await store.markPendingUploaded(pending.id, clock.now()))) {
    throw new SignatureRefusedError('A blob was already uploaded with this URL; it is good for one blob only');
  }
  let staged: StagedFile | null = null;
  try {
    staged = await context.stage(request.body);
    await blobs.putFile(blobKey, staged.path);
  } catch (error) {
    await discard(staged);
    // A failed transfer created no blob, so the URL may be used again (as with Azure).
    await store.clearPendingUploaded(pending.id);
    throw error;
  }
}
