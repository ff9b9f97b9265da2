/** /api/workspace (contract §2). */
import { Type } from '@sinclair/typebox';
import { Capability } from '../../../core/index.ts';
import { createWorkspace, deleteWorkspace, listWorkspaces, updateWorkspace } from '../../../domain/index.ts';
import { errorResponses, Id, Name, Nullable } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const Region = Nullable(Type.String({ minLength: 1, maxLength: 100 }));
const WorkspaceSchema = Type.Object({
  workspaceId: Id,
  organizationId: Id,
  name: Type.String(),
  packageStoreRegion: Nullable(Type.String()),
});
const tags = ['workspaces'];

export const workspaceRoutes: Routes = async (app) => {
  app.get(
    '/api/workspace',
    {
      schema: {
        tags,
        summary: 'Lists the workspaces the account can see',
        response: {
          200: Type.Object({ workspaces: Type.Array(WorkspaceSchema), totalCount: Type.Integer() }),
          ...errorResponses,
        },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const workspaces = await listWorkspaces(request.deps, request.principal);
      return {
        workspaces: workspaces.map((w) => ({
          workspaceId: w.id,
          organizationId: w.organizationId,
          name: w.name,
          packageStoreRegion: w.packageStoreRegion,
        })),
        totalCount: workspaces.length,
      };
    },
  );

  app.post(
    '/api/workspace',
    {
      schema: {
        tags,
        summary: 'Creates a workspace',
        body: Type.Object({ name: Name, packageStoreRegion: Type.Optional(Region) }),
        response: { 200: Type.Object({ workspaceId: Id }), ...errorResponses },
      },
      config: { capability: Capability.Admin },
    },
    async (request) => createWorkspace(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/workspace',
    {
      schema: {
        tags,
        summary: 'Renames a workspace or sets its package store region',
        body: Type.Object({ workspaceId: Id, name: Type.Optional(Name), packageStoreRegion: Type.Optional(Region) }),
        response: errorResponses,
      },
      config: { capability: Capability.Admin },
    },
    async (request, reply) => {
      await updateWorkspace(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/workspace',
    {
      schema: {
        tags,
        summary: 'Soft-deletes a workspace',
        body: Type.Object({ workspaceId: Id }),
        response: errorResponses,
      },
      config: { capability: Capability.Admin },
    },
    async (request, reply) => {
      await deleteWorkspace(request.deps, request.principal, request.body.workspaceId);
      return reply.send();
    },
  );
};
