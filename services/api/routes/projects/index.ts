/** /api/project (spec §4.12, contract §3), including clone. */
import { Type } from '@sinclair/typebox';
import { Capability } from '../../../core/index.ts';
import {
  cloneProject,
  createProject,
  deleteProject,
  getProject,
  listProjects,
  updateProject,
} from '../../../domain/index.ts';
import type { Project } from '../../../store/index.ts';
import { Description, errorResponses, Id, Name, Nullable, PageQuery } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

export const ProjectSchema = Type.Object({
  projectId: Id,
  workspaceId: Id,
  name: Type.String(),
  description: Nullable(Type.String()),
  lifecycleId: Nullable(Id),
  createdUtc: Type.String(),
});

export function toProjectDto(p: Project) {
  return {
    projectId: p.id,
    workspaceId: p.workspaceId,
    name: p.name,
    description: p.description,
    lifecycleId: p.lifecycleId,
    createdUtc: p.createdUtc.toISOString(),
  };
}

const tags = ['projects'];

export const projectRoutes: Routes = async (app) => {
  app.get(
    '/api/project',
    {
      schema: {
        tags,
        summary:
          'Lists projects visible to the service account in a workspace (without workspaceId: in every workspace it sees)',
        querystring: Type.Object({ workspaceId: Type.Optional(Id), ...PageQuery }),
        response: {
          200: Type.Object({ projects: Type.Array(ProjectSchema), totalCount: Type.Integer() }),
          ...errorResponses,
        },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listProjects(request.deps, request.principal, request.query);
      return { projects: page.items.map(toProjectDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/project/details',
    {
      schema: {
        tags,
        summary: 'Reads one project',
        querystring: Type.Object({ projectId: Id }),
        response: { 200: ProjectSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => toProjectDto(await getProject(request.deps, request.principal, request.query.projectId)),
  );

  app.post(
    '/api/project',
    {
      schema: {
        tags,
        summary: 'Creates a project in a workspace',
        body: Type.Object({
          workspaceId: Id,
          name: Name,
          description: Type.Optional(Description),
          lifecycleId: Type.Optional(Nullable(Id)),
        }),
        response: { 200: Type.Object({ projectId: Id }), ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => createProject(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project',
    {
      schema: {
        tags,
        summary: 'Updates project name, description and lifecycle',
        body: Type.Object({
          projectId: Id,
          name: Type.Optional(Name),
          description: Type.Optional(Description),
          lifecycleId: Type.Optional(Nullable(Id)),
        }),
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await updateProject(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/project/clone',
    {
      schema: {
        tags,
        summary: 'Clones a project (steps, rolling groups, channels, variables, imports) into the same workspace',
        body: Type.Object({ projectId: Id, name: Name }),
        response: { 200: Type.Object({ projectId: Id }), ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => cloneProject(request.deps, request.principal, request.body),
  );

  app.delete(
    '/api/project',
    {
      schema: {
        tags,
        summary: 'Soft-deletes a project',
        body: Type.Object({ projectId: Id }),
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await deleteProject(request.deps, request.principal, request.body.projectId);
      return reply.send();
    },
  );
};
