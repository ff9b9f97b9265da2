/**
 * Azure Blob Storage backend. Upload URLs are real SAS URLs for one blob with Create permission
 * only: write-only, and a second PUT to an existing blob is refused (403) by the service itself,
 * which is what makes the URL good for exactly one blob.
 */
import fs from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { BlobSASPermissions, BlobServiceClient, RestError } from '@azure/storage-blob';
import { assertSafeKey, type BlobStore } from './blob-store.ts';

export interface AzureBlobStoreOptions {
  /** Must carry an AccountKey: SAS URLs are signed with the shared key. */
  connectionString: string;
  container: string;
}

function isNotFound(error: unknown): boolean {
  return error instanceof RestError && error.statusCode === 404;
}

export async function createAzureBlobStore(options: AzureBlobStoreOptions): Promise<BlobStore> {
  const container = BlobServiceClient.fromConnectionString(options.connectionString).getContainerClient(
    options.container,
  );
  await container.createIfNotExists();
  const blob = (key: string) => {
    assertSafeKey(key);
    return container.getBlockBlobClient(key);
  };
  return {
    kind: 'azure',
    async putFile(key, localPath) {
      // Uploaded from the validated local copy, never copied server-side from the pending blob,
      // so the feed holds exactly the bytes that were hashed and checked.
      await blob(key).uploadFile(localPath, { blockSize: 8 * 1024 * 1024, concurrency: 4 });
      await fs.rm(localPath, { force: true });
    },
    async openRead(key) {
      try {
        const response = await blob(key).download();
        return (response.readableStreamBody as Readable | undefined) ?? null;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },
    async delete(key) {
      await blob(key).deleteIfExists();
    },
    async retire(key) {
      await blob(key).upload('', 0, { metadata: { retired: 'true' } });
    },
    async createUploadUrl(key, expiresAt) {
      // No startsOn: a client clock slightly behind ours must not be refused.
      return blob(key).generateSasUrl({ permissions: BlobSASPermissions.parse('c'), expiresOn: expiresAt });
    },
  };
}
