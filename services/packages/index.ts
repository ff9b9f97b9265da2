/** The package store concern: its public surface (contract §6). */
export {
  createPackageService,
  stagingDirOf,
  DEFAULT_MAX_PACKAGE_BYTES,
  UPLOAD_URL_LIFETIME_MS,
} from './package-service.ts';
export type {
  PackageService,
  PackageServiceOptions,
  NegotiateResult,
  Download,
  UploadInput,
} from './package-service.ts';
export type { DirectUploadRequest } from './direct-upload.ts';
export { createFilesystemBlobStore } from './blob-store.ts';
export type { BlobStore, FilesystemBlobStore } from './blob-store.ts';
export { createAzureBlobStore } from './azure-blob-store.ts';
export { loadUploadKey } from './upload-signature.ts';
export { parsePackageFileName, packageFileName, PackageType } from './file-name.ts';
export type { PackageFileName } from './file-name.ts';
export type { StoredPackage } from '../store/index.ts';
export { loadAgentDistribution } from './agent-distribution.ts';
export type { AgentDistribution } from './agent-distribution.ts';
