/** /api/project/step(s) (spec §4.11, contract §3): EditProject writes, View reads. */
import { Capability } from '../../../core/index.ts';
import {
  cloneProjectStep,
  createProjectStep,
  deleteProjectStep,
  listProjectSteps,
  reorderProjectSteps,
  updateProjectStep,
} from '../../../domain/index.ts';
import type { ProjectStep } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CloneProjectStepBody,
  CreatedProjectStep,
  CreateProjectStepBody,
  ProjectIdQuery,
  ProjectStepIdBody,
  ProjectStepList,
  ReorderStepsBody,
  UpdateProjectStepBody,
} from './schemas.ts';

const tags = ['project steps'];

function toProjectStepDto(s: ProjectStep) {
  return {
    projectStepId: s.id,
    name: s.name,
    description: s.description,
    stepTemplateId: s.stepTemplateId,
    sortOrder: s.sortOrder,
    runMode: s.runMode,
    errorAction: s.errorAction,
    disabled: s.disabled,
    parallelMachines: s.parallelMachines,
    environments: s.environmentIds,
    machineIdFilter: s.machineIdFilter,
    machineTagFilter: s.machineTagFilter,
    propertiesJson: s.propertiesJson,
    rollingGroupId: s.rollingGroupId,
  };
}

export const projectStepRoutes: Routes = async (app) => {
  app.get(
    '/api/project/steps',
    {
      schema: {
        tags,
        summary: 'Lists the ordered steps of a project',
        querystring: ProjectIdQuery,
        response: { 200: ProjectStepList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const { projectId, steps } = await listProjectSteps(request.deps, request.principal, request.query.projectId);
      return { projectId, steps: steps.map(toProjectStepDto) };
    },
  );

  app.post(
    '/api/project/step',
    {
      schema: {
        tags,
        summary: "Appends a step at the end of the project's step list",
        body: CreateProjectStepBody,
        response: { 200: CreatedProjectStep, ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => createProjectStep(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project/step',
    {
      schema: {
        tags,
        summary: 'Updates step name, scope, run mode, parallelism, error handling, properties',
        body: UpdateProjectStepBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await updateProjectStep(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/step',
    {
      schema: {
        tags,
        summary: 'Removes a step (and a rolling group it was the only member of)',
        body: ProjectStepIdBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await deleteProjectStep(request.deps, request.principal, request.body.projectStepId);
      return reply.send();
    },
  );

  app.put(
    '/api/project/steps/order',
    {
      schema: {
        tags,
        summary: "Replaces the order of a project's steps",
        body: ReorderStepsBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await reorderProjectSteps(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/project/step/clone',
    {
      schema: {
        tags,
        summary: 'Copies a step into the same or another project',
        body: CloneProjectStepBody,
        response: { 200: CreatedProjectStep, ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => cloneProjectStep(request.deps, request.principal, request.body),
  );
};
