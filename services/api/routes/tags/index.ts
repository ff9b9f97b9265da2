/** /api/tag (contract §3). */
import { Type } from '@sinclair/typebox';
import { Capability } from '../../../core/index.ts';
import { createTag, deleteTag, listTags, updateTag } from '../../../domain/index.ts';
import { errorResponses, Id, Name, Nullable, PageQuery } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const Color = Nullable(Type.String({ maxLength: 50 }));
const TagSchema = Type.Object({ tagId: Id, workspaceId: Id, name: Type.String(), color: Nullable(Type.String()) });
const tags = ['tags'];

export const tagRoutes: Routes = async (app) => {
  app.get(
    '/api/tag',
    {
      schema: {
        tags,
        summary: 'Lists tags of a workspace',
        querystring: Type.Object({ workspaceId: Id, ...PageQuery }),
        response: { 200: Type.Object({ tags: Type.Array(TagSchema), totalCount: Type.Integer() }), ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listTags(request.deps, request.principal, request.query);
      return {
        tags: page.items.map((t) => ({ tagId: t.id, workspaceId: t.workspaceId, name: t.name, color: t.color })),
        totalCount: page.totalCount,
      };
    },
  );

  app.post(
    '/api/tag',
    {
      schema: {
        tags,
        summary: 'Creates a tag',
        body: Type.Object({ workspaceId: Id, name: Name, color: Type.Optional(Color) }),
        response: { 200: Type.Object({ tagId: Id }), ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createTag(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/tag',
    {
      schema: {
        tags,
        summary: 'Renames or recolours a tag',
        body: Type.Object({ tagId: Id, name: Type.Optional(Name), color: Type.Optional(Color) }),
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateTag(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/tag',
    {
      schema: {
        tags,
        summary: 'Deletes a tag and removes it from machines, step filters and rolling-group orders',
        body: Type.Object({ tagId: Id }),
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteTag(request.deps, request.principal, request.body.tagId);
      return reply.send();
    },
  );
};
