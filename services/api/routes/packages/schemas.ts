import { Type } from '@sinclair/typebox';
import { Id, PageQuery } from '../../schemas.ts';

const FileName = Type.String({ minLength: 1, maxLength: 255 });
const PackageIdParam = Type.String({ minLength: 1, maxLength: 255 });
const Version = Type.String({ minLength: 1, maxLength: 256 });

export const PackageSchema = Type.Object({
  packageId: Type.String(),
  version: Type.String({ description: 'Exactly as uploaded, build metadata included' }),
  type: Type.String({ description: 'nupkg, zip, tar or tar.gz' }),
  sizeBytes: Type.Integer(),
  sha256: Type.String(),
  uploadedUtc: Type.String({ format: 'date-time' }),
});

export const ListPackagesQuery = Type.Object({
  workspaceId: Id,
  packageId: Type.Optional(PackageIdParam),
  ...PageQuery,
});
export const PackageList = Type.Object({ packages: Type.Array(PackageSchema), totalCount: Type.Integer() });

export const DownloadQuery = Type.Object({ workspaceId: Id, packageId: PackageIdParam, version: Version });
export const PackageBytes = Type.String({ format: 'binary', description: 'The package file' });

/** PascalCase on the wire (api-spec §4.7); any case is accepted. */
export const NegotiateBody = Type.Object({ WorkspaceId: Id, FileName });
export const NegotiateResponse = Type.Object({
  mode: Type.Union([Type.Literal('direct'), Type.Literal('legacy')]),
  uploadUrl: Type.Optional(
    Type.String({ description: 'Present only in direct mode: PUT the bytes here with x-ms-blob-type: BlockBlob' }),
  ),
});
export const ConfirmBody = NegotiateBody;

export const BlobParams = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) });
export const BlobQuery = Type.Object({
  exp: Type.Optional(Type.String({ maxLength: 20 })),
  sig: Type.Optional(Type.String({ maxLength: 200 })),
});
