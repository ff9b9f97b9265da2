/**
 * POST /api/packagestore/package (api-spec §4.6): multipart with `workspaceId` (or
 * `WorkspaceId`) and the file `PackageFile`, streamed to staging, never buffered.
 */
import multipart from '@fastify/multipart';
import { Capability, InvalidParameterError, isStorableText, isWellFormedId, unknownId } from '../../../core/index.ts';
import { Empty, errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const tags = ['packages'];

function required(property: string): InvalidParameterError {
  return new InvalidParameterError(`Form field '${property}' is required`, [{ property, messages: ['is required'] }]);
}

export const uploadRoutes: Routes = async (app) => {
  const { packages } = app.deps;
  await app.register(multipart, {
    // One byte over the limit reaches the staging meter, which refuses the upload. Busboy alone
    // would silently truncate at fileSize and report success (stack-notes §7).
    limits: { fileSize: packages.maxBytes + 1, files: 1, fields: 10, fieldSize: 1000, parts: 12, headerPairs: 100 },
  });

  app.post(
    '/api/packagestore/package',
    {
      schema: {
        tags,
        summary: 'Uploads a package file (multipart: workspaceId, PackageFile)',
        consumes: ['multipart/form-data'],
        response: { 200: Empty, ...errorResponses },
      },
      config: { capability: Capability.PushPackages },
    },
    async (request, reply) => {
      if (!request.isMultipart()) {
        throw Object.assign(new Error('Unsupported Content-Type: this endpoint takes multipart/form-data'), {
          statusCode: 415,
        });
      }
      let workspaceId: string | undefined;
      let fileName: string | undefined;
      let staged: Awaited<ReturnType<typeof packages.stage>> | null = null;
      let published = false;
      try {
        for await (const part of request.parts()) {
          if (part.type === 'field') {
            if (part.fieldname.toLowerCase() === 'workspaceid' && typeof part.value === 'string') {
              if (!isWellFormedId(part.value)) throw unknownId('workspaceId');
              workspaceId = part.value;
            }
            continue;
          }
          if (part.fieldname.toLowerCase() !== 'packagefile' || fileName !== undefined) {
            part.file.resume();
            continue;
          }
          if (!isStorableText(part.filename)) {
            throw new InvalidParameterError('The file name must not contain NUL or unpaired surrogates', [
              { property: 'PackageFile', messages: ['file name is not storable text'] },
            ]);
          }
          fileName = part.filename;
          // Usually the workspace comes first and everything is checked before a byte is stored;
          // a form that sends the file first is staged and checked afterwards.
          if (workspaceId !== undefined) {
            await packages.upload(request.principal, { workspaceId, fileName }, part.file);
            published = true;
          } else {
            staged = await packages.stage(part.file);
          }
        }
        if (fileName === undefined) throw required('PackageFile');
        if (!published) {
          if (workspaceId === undefined) throw required('workspaceId');
          const toPublish = staged;
          staged = null;
          if (toPublish) await packages.publishStaged(request.principal, { workspaceId, fileName }, toPublish);
        }
      } finally {
        await packages.discard(staged);
      }
      return reply.send();
    },
  );
};
