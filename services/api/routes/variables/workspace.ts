/** /api/workspace-variable and /api/workspace-variable/value (spec §4.12). ManageWorkspace writes, View reads. */
import { Capability } from '../../../core/index.ts';
import {
  createWorkspaceVariable,
  createWorkspaceVariableValue,
  deleteWorkspaceVariable,
  deleteWorkspaceVariableValue,
  listWorkspaceVariables,
  updateWorkspaceVariable,
  updateWorkspaceVariableValue,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedValue,
  CreatedVariable,
  CreateValueBody,
  CreateWorkspaceVariableBody,
  UpdateValueBody,
  UpdateVariableBody,
  ValueIdBody,
  VariableIdBody,
  WorkspaceVariableList,
  WorkspaceVariablesQuery,
} from './schemas.ts';

const tags = ['workspace variables'];
const manage = { capability: Capability.ManageWorkspace };

export const workspaceVariableRoutes: Routes = async (app) => {
  app.get(
    '/api/workspace-variable',
    {
      schema: {
        tags,
        summary: 'Lists workspace-level variables with their scoped values (Sensitive values as null)',
        querystring: WorkspaceVariablesQuery,
        response: { 200: WorkspaceVariableList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listWorkspaceVariables(request.deps, request.principal, request.query);
      return { workspaceId: page.workspaceId, variables: page.items, totalCount: page.totalCount };
    },
  );

  app.post(
    '/api/workspace-variable',
    {
      schema: {
        tags,
        summary: 'Creates a workspace variable',
        body: CreateWorkspaceVariableBody,
        response: { 200: CreatedVariable, ...errorResponses },
      },
      config: manage,
    },
    async (request) => createWorkspaceVariable(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/workspace-variable',
    {
      schema: {
        tags,
        summary: 'Updates workspace variable metadata',
        body: UpdateVariableBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updateWorkspaceVariable(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/workspace-variable',
    {
      schema: {
        tags,
        summary: 'Soft-deletes a workspace variable, its values and its imports',
        body: VariableIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await deleteWorkspaceVariable(request.deps, request.principal, request.body.variableId);
      return reply.send();
    },
  );

  app.post(
    '/api/workspace-variable/value',
    {
      schema: {
        tags,
        summary: 'Adds a scoped value to a workspace variable',
        body: CreateValueBody,
        response: { 200: CreatedValue, ...errorResponses },
      },
      config: manage,
    },
    async (request) => createWorkspaceVariableValue(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/workspace-variable/value',
    {
      schema: {
        tags,
        summary: 'Updates a scoped value of a workspace variable',
        body: UpdateValueBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updateWorkspaceVariableValue(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/workspace-variable/value',
    {
      schema: {
        tags,
        summary: 'Soft-deletes a scoped value of a workspace variable',
        body: ValueIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await deleteWorkspaceVariableValue(request.deps, request.principal, request.body.variableValueId);
      return reply.send();
    },
  );
};
