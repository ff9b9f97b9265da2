/** /api/packagestore (api-spec §4.6, §4.7; contract §6). */
import { Capability } from '../../../core/index.ts';
import type { StoredPackage } from '../../../packages/index.ts';
import { Empty, errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { blobRoutes } from './blob.ts';
import {
  ConfirmBody,
  DownloadQuery,
  ListPackagesQuery,
  NegotiateBody,
  NegotiateResponse,
  PackageBytes,
  PackageList,
} from './schemas.ts';
import { uploadRoutes } from './upload.ts';

export const tags = ['packages'];

export function toPackageDto(p: StoredPackage) {
  return {
    packageId: p.packageId,
    version: p.version,
    type: p.type,
    sizeBytes: p.sizeBytes,
    sha256: p.sha256,
    uploadedUtc: p.uploadedAt.toISOString(),
  };
}

export const packageRoutes: Routes = async (app) => {
  // Each in its own encapsulated context: their content-type parsers must not reach the JSON routes.
  await app.register(uploadRoutes);
  await app.register(blobRoutes);

  app.get(
    '/api/packagestore/packages',
    {
      schema: {
        tags,
        summary: 'Lists packages of a workspace, highest SemVer first',
        querystring: ListPackagesQuery,
        response: { 200: PackageList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const { skip = 0, take = 50, ...query } = request.query;
      const all = await request.deps.packages.list(request.principal, query);
      return { packages: all.slice(skip, skip + take).map(toPackageDto), totalCount: all.length };
    },
  );

  app.get(
    '/api/packagestore/package/download',
    {
      schema: {
        tags,
        summary: 'Downloads one package file',
        querystring: DownloadQuery,
        response: { 200: PackageBytes, ...errorResponses },
      },
      config: { capability: [Capability.View, Capability.Deploy] },
    },
    async (request, reply) => {
      const download = await request.deps.packages.download(request.principal, request.query);
      return reply
        .type('application/octet-stream')
        .header('content-length', download.package.sizeBytes)
        .header('content-disposition', `attachment; filename="${download.fileName}"`)
        .header('x-package-sha256', download.package.sha256)
        .send(download.stream);
    },
  );

  app.post(
    '/api/packagestore/package/negotiate',
    {
      schema: {
        tags,
        summary: 'Chooses direct or legacy (multipart) upload for a package file',
        body: NegotiateBody,
        response: { 200: NegotiateResponse, ...errorResponses },
      },
      config: { capability: Capability.PushPackages },
    },
    async (request) =>
      request.deps.packages.negotiate(request.principal, {
        workspaceId: request.body.WorkspaceId,
        fileName: request.body.FileName,
      }),
  );

  app.post(
    '/api/packagestore/package/confirm',
    {
      schema: {
        tags,
        summary: 'Validates a directly uploaded package and publishes it',
        body: ConfirmBody,
        response: { 200: Empty, ...errorResponses },
      },
      config: { capability: Capability.PushPackages },
    },
    async (request, reply) => {
      await request.deps.packages.confirm(request.principal, {
        workspaceId: request.body.WorkspaceId,
        fileName: request.body.FileName,
      });
      return reply.send();
    },
  );
};
