/**
 * /api/script-module (workspace modules) and /api/project/script-module(s) (a project's imports),
 * contract §3. Imports live here, beside the modules they point at.
 */
import { Capability } from '../../../core/index.ts';
import {
  addProjectScriptModule,
  createScriptModule,
  deleteScriptModule,
  getScriptModule,
  listProjectScriptModules,
  listScriptModules,
  removeProjectScriptModule,
  setProjectScriptModules,
  updateScriptModule,
} from '../../../domain/index.ts';
import type { ScriptModule } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedScriptModule,
  CreateScriptModuleBody,
  ListScriptModulesQuery,
  ProjectIdQuery,
  ProjectScriptModuleBody,
  ProjectScriptModules,
  ScriptModuleIdBody,
  ScriptModuleIdQuery,
  ScriptModuleList,
  ScriptModuleSchema,
  SetProjectScriptModulesBody,
  UpdateScriptModuleBody,
} from './schemas.ts';

const tags = ['script modules'];

function toSummaryDto(m: ScriptModule) {
  return {
    scriptModuleId: m.id,
    workspaceId: m.workspaceId,
    name: m.name,
    description: m.description,
    scriptLanguage: m.scriptLanguage,
  };
}

export const scriptModuleRoutes: Routes = async (app) => {
  const view = { capability: Capability.View };
  const manage = { capability: Capability.ManageWorkspace };
  const edit = { capability: Capability.EditProject };

  app.get(
    '/api/script-module',
    {
      schema: {
        tags,
        summary: 'Lists script modules of a workspace (without scripts)',
        querystring: ListScriptModulesQuery,
        response: { 200: ScriptModuleList, ...errorResponses },
      },
      config: view,
    },
    async (request) => {
      const page = await listScriptModules(request.deps, request.principal, request.query);
      return { scriptModules: page.items.map(toSummaryDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/script-module/details',
    {
      schema: {
        tags,
        summary: 'Reads one script module with its script',
        querystring: ScriptModuleIdQuery,
        response: { 200: ScriptModuleSchema, ...errorResponses },
      },
      config: view,
    },
    async (request) => {
      const module = await getScriptModule(request.deps, request.principal, request.query.scriptModuleId);
      return { ...toSummaryDto(module), script: module.script };
    },
  );

  app.post(
    '/api/script-module',
    {
      schema: {
        tags,
        summary: 'Creates a script module',
        body: CreateScriptModuleBody,
        response: { 200: CreatedScriptModule, ...errorResponses },
      },
      config: manage,
    },
    async (request) => createScriptModule(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/script-module',
    {
      schema: {
        tags,
        summary: 'Updates name, description, script or language of a script module',
        body: UpdateScriptModuleBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updateScriptModule(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/script-module',
    {
      schema: {
        tags,
        summary: 'Deletes a script module no live project imports',
        body: ScriptModuleIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await deleteScriptModule(request.deps, request.principal, request.body.scriptModuleId);
      return reply.send();
    },
  );

  app.get(
    '/api/project/script-modules',
    {
      schema: {
        tags,
        summary: 'Lists script modules imported into a project',
        querystring: ProjectIdQuery,
        response: { 200: ProjectScriptModules, ...errorResponses },
      },
      config: view,
    },
    async (request) => {
      const result = await listProjectScriptModules(request.deps, request.principal, request.query.projectId);
      return {
        projectId: result.projectId,
        scriptModules: result.scriptModules.map((m) => ({
          scriptModuleId: m.id,
          name: m.name,
          scriptLanguage: m.scriptLanguage,
        })),
      };
    },
  );

  app.put(
    '/api/project/script-modules',
    {
      schema: {
        tags,
        summary: 'Sets the full list of imported script modules',
        body: SetProjectScriptModulesBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await setProjectScriptModules(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/project/script-module',
    {
      schema: {
        tags,
        summary: 'Imports one workspace script module',
        body: ProjectScriptModuleBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await addProjectScriptModule(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/script-module',
    {
      schema: {
        tags,
        summary: 'Removes one script module assignment',
        body: ProjectScriptModuleBody,
        response: errorResponses,
      },
      config: edit,
    },
    async (request, reply) => {
      await removeProjectScriptModule(request.deps, request.principal, request.body);
      return reply.send();
    },
  );
};
