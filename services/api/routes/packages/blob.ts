/**
 * PUT /api/packagestore/blob/<token>?exp&sig: the filesystem backend's upload URL (api-spec §4.7).
 * Public: the signature is the credential. Takes any content type as raw bytes, streamed.
 */
import { Type } from '@sinclair/typebox';
import { Empty } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { BlobParams, BlobQuery } from './schemas.ts';

const tags = ['packages'];

export const blobRoutes: Routes = async (app) => {
  const { packages } = app.deps;
  // The body is the package itself: leave it unread here and stream request.raw to staging.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  app.put(
    '/api/packagestore/blob/:token',
    {
      schema: {
        tags,
        summary: 'Receives the bytes of a direct upload (the URL from negotiate; filesystem backend)',
        params: BlobParams,
        querystring: BlobQuery,
        response: { 201: Empty, 400: Type.Ref('ErrorBody'), 403: Type.Ref('ErrorBody') },
        security: [],
      },
      config: { public: true },
    },
    async (request, reply) => {
      const blobType = request.headers['x-ms-blob-type'];
      await packages.receiveDirectUpload({
        token: request.params.token,
        exp: request.query.exp,
        sig: request.query.sig,
        blobType: typeof blobType === 'string' ? blobType : undefined,
        body: request.raw,
      });
      reply.code(201);
      return reply.send();
    },
  );
};
