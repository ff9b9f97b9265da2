/** /api/environment (contract §3). */
import { Capability } from '../../../core/index.ts';
import {
  createEnvironment,
  deleteEnvironment,
  getEnvironment,
  listEnvironments,
  updateEnvironment,
} from '../../../domain/index.ts';
import type { Environment } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreateEnvironmentBody,
  CreatedEnvironment,
  EnvironmentIdBody,
  EnvironmentIdQuery,
  EnvironmentList,
  EnvironmentSchema,
  ListEnvironmentsQuery,
  UpdateEnvironmentBody,
} from './schemas.ts';

const tags = ['environments'];

export function toEnvironmentDto(e: Environment) {
  return {
    environmentId: e.id,
    workspaceId: e.workspaceId,
    name: e.name,
    description: e.description,
    sortOrder: e.sortOrder,
    color: e.color,
    enabled: e.enabled,
    requiredApprovals: e.requiredApprovals,
  };
}

export const environmentRoutes: Routes = async (app) => {
  app.get(
    '/api/environment',
    {
      schema: {
        tags,
        summary: 'Lists environments of a workspace',
        querystring: ListEnvironmentsQuery,
        response: { 200: EnvironmentList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listEnvironments(request.deps, request.principal, request.query);
      return { environments: page.items.map(toEnvironmentDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/environment/details',
    {
      schema: {
        tags,
        summary: 'Reads one environment',
        querystring: EnvironmentIdQuery,
        response: { 200: EnvironmentSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) =>
      toEnvironmentDto(await getEnvironment(request.deps, request.principal, request.query.environmentId)),
  );

  app.post(
    '/api/environment',
    {
      schema: {
        tags,
        summary: 'Creates an environment',
        body: CreateEnvironmentBody,
        response: { 200: CreatedEnvironment, ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createEnvironment(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/environment',
    {
      schema: {
        tags,
        summary: 'Renames, restyles, reorders, or disables an environment',
        body: UpdateEnvironmentBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateEnvironment(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/environment',
    {
      schema: { tags, summary: 'Soft-deletes an environment', body: EnvironmentIdBody, response: errorResponses },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteEnvironment(request.deps, request.principal, request.body.environmentId);
      return reply.send();
    },
  );
};
