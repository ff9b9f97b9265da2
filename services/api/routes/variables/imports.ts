/** /api/project/workspace-variable(s): which workspace variables a project imports (spec §4.12). */
import { Capability } from '../../../core/index.ts';
import {
  importWorkspaceVariable,
  listImportedWorkspaceVariables,
  removeWorkspaceVariableImport,
  setImportedWorkspaceVariables,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { ImportBody, ImportedVariableList, ProjectIdQuery, SetImportsBody } from './schemas.ts';

const tags = ['variables'];
const edit = { capability: Capability.EditProject };

export const variableImportRoutes: Routes = async (app) => {
  app.get(
    '/api/project/workspace-variables',
    {
      schema: {
        tags,
        summary: 'Lists workspace variables imported into a project',
        querystring: ProjectIdQuery,
        response: { 200: ImportedVariableList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => listImportedWorkspaceVariables(request.deps, request.principal, request.query.projectId),
  );

  app.put(
    '/api/project/workspace-variables',
    {
      schema: {
        tags,
        summary: 'Sets the full list of imported workspace variables',
        body: SetImportsBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await setImportedWorkspaceVariables(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/project/workspace-variable',
    {
      schema: { tags, summary: 'Imports one workspace variable', body: ImportBody, response: errorResponses },
      config: edit,
    },
    async (request, reply) => {
      await importWorkspaceVariable(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/workspace-variable',
    {
      schema: { tags, summary: 'Removes one workspace variable import', body: ImportBody, response: errorResponses },
      config: edit,
    },
    async (request, reply) => {
      await removeWorkspaceVariableImport(request.deps, request.principal, request.body);
      return reply.send();
    },
  );
};
