/** /api/step-template (contract §3): ManageWorkspace writes, View reads. */
import { Capability } from '../../../core/index.ts';
import {
  createStepTemplate,
  deleteStepTemplate,
  getStepTemplate,
  listStepTemplates,
  updateStepTemplate,
} from '../../../domain/index.ts';
import type { StepTemplate } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedStepTemplate,
  CreateStepTemplateBody,
  ListStepTemplatesQuery,
  StepTemplateDetailsQuery,
  StepTemplateIdBody,
  StepTemplateList,
  StepTemplateSchema,
  UpdateStepTemplateBody,
} from './schemas.ts';

const tags = ['step templates'];

function toStepTemplateDto(t: StepTemplate) {
  return {
    stepTemplateId: t.id,
    workspaceId: t.workspaceId,
    name: t.name,
    description: t.description,
    script: t.script,
    scriptLanguage: t.scriptLanguage,
    supportedRunModes: t.supportedRunModes,
    propertiesRaw: t.propertiesRaw,
  };
}

export const stepTemplateRoutes: Routes = async (app) => {
  app.get(
    '/api/step-template',
    {
      schema: {
        tags,
        summary: 'Lists step templates of a workspace',
        querystring: ListStepTemplatesQuery,
        response: { 200: StepTemplateList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listStepTemplates(request.deps, request.principal, request.query);
      return { stepTemplates: page.items.map(toStepTemplateDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/step-template/details',
    {
      schema: {
        tags,
        summary: 'Retrieves one step template by ID, or by workspaceId and name',
        querystring: StepTemplateDetailsQuery,
        response: { 200: StepTemplateSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => toStepTemplateDto(await getStepTemplate(request.deps, request.principal, request.query)),
  );

  app.post(
    '/api/step-template',
    {
      schema: {
        tags,
        summary: 'Defines a step template',
        body: CreateStepTemplateBody,
        response: { 200: CreatedStepTemplate, ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createStepTemplate(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/step-template',
    {
      schema: {
        tags,
        summary: 'Updates name, script, properties or run modes',
        body: UpdateStepTemplateBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateStepTemplate(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/step-template',
    {
      schema: {
        tags,
        summary: 'Soft-deletes a step template that no step uses',
        body: StepTemplateIdBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteStepTemplate(request.deps, request.principal, request.body.stepTemplateId);
      return reply.send();
    },
  );
};
