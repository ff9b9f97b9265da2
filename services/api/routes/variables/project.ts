/** /api/project/variable(s) and /api/project/variable/value (contract §3). EditProject writes, View reads. */
import { Capability } from '../../../core/index.ts';
import {
  createProjectVariable,
  createProjectVariableValue,
  deleteProjectVariable,
  deleteProjectVariableValue,
  listProjectVariables,
  updateProjectVariable,
  updateProjectVariableValue,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedValue,
  CreatedVariable,
  CreateProjectVariableBody,
  CreateValueBody,
  ProjectIdQuery,
  ProjectVariableList,
  UpdateValueBody,
  UpdateVariableBody,
  ValueIdBody,
  VariableIdBody,
} from './schemas.ts';

const tags = ['variables'];
const edit = { capability: Capability.EditProject };

export const projectVariableRoutes: Routes = async (app) => {
  app.get(
    '/api/project/variables',
    {
      schema: {
        tags,
        summary: "Lists a project's variables with their scoped values (Sensitive values as null)",
        querystring: ProjectIdQuery,
        response: { 200: ProjectVariableList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => listProjectVariables(request.deps, request.principal, request.query.projectId),
  );

  app.post(
    '/api/project/variable',
    {
      schema: {
        tags,
        summary: 'Creates a project variable',
        body: CreateProjectVariableBody,
        response: { 200: CreatedVariable, ...errorResponses },
      },
      config: edit,
    },
    async (request) => createProjectVariable(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project/variable',
    {
      schema: {
        tags,
        summary: "Updates a project variable's name, description or type",
        body: UpdateVariableBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await updateProjectVariable(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/variable',
    {
      schema: {
        tags,
        summary: 'Deletes a project variable and its values',
        body: VariableIdBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await deleteProjectVariable(request.deps, request.principal, request.body.variableId);
      return reply.send();
    },
  );

  app.post(
    '/api/project/variable/value',
    {
      schema: {
        tags,
        summary: 'Adds a scoped value to a project variable',
        body: CreateValueBody,
        response: { 200: CreatedValue, ...errorResponses },
      },
      config: edit,
    },
    async (request) => createProjectVariableValue(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project/variable/value',
    {
      schema: {
        tags,
        summary: 'Updates a scoped value of a project variable',
        body: UpdateValueBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await updateProjectVariableValue(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/variable/value',
    {
      schema: {
        tags,
        summary: 'Deletes a scoped value of a project variable',
        body: ValueIdBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await deleteProjectVariableValue(request.deps, request.principal, request.body.variableValueId);
      return reply.send();
    },
  );
};
