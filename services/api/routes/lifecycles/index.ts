/** /api/lifecycle and its phase endpoints (spec §2.4, §4.8, §4.9, §4.12; contract §3). */
import { Capability } from '../../../core/index.ts';
import {
  addPhase,
  createLifecycle,
  deleteLifecycle,
  deletePhase,
  getLifecycle,
  listLifecycles,
  removePhaseEnvironment,
  setPhaseEnvironment,
  updateLifecycle,
  updatePhase,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedLifecycle,
  CreatedPhase,
  CreateLifecycleBody,
  CreatePhaseBody,
  LifecycleIdBody,
  LifecycleIdQuery,
  LifecycleList,
  LifecycleSchema,
  ListLifecyclesQuery,
  PhaseEnvironmentBody,
  PhaseIdBody,
  SetPhaseEnvironmentBody,
  UpdateLifecycleBody,
  UpdatePhaseBody,
} from './schemas.ts';

const tags = ['lifecycles'];
// Spec §5: lifecycle endpoints need permission to manage lifecycles; only the list is a plain read.
const manage = { capability: Capability.ManageWorkspace };

export const lifecycleRoutes: Routes = async (app) => {
  app.get(
    '/api/lifecycle',
    {
      schema: {
        tags,
        summary: 'Lists lifecycles of a workspace with their phases',
        querystring: ListLifecyclesQuery,
        response: { 200: LifecycleList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listLifecycles(request.deps, request.principal, request.query);
      return { lifecycles: page.items, totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/lifecycle/details',
    {
      schema: {
        tags,
        summary: 'Reads one lifecycle with its phases and their environments',
        querystring: LifecycleIdQuery,
        response: { 200: LifecycleSchema, ...errorResponses },
      },
      config: manage,
    },
    async (request) => getLifecycle(request.deps, request.principal, request.query.lifecycleId),
  );

  app.post(
    '/api/lifecycle',
    {
      schema: {
        tags,
        summary: 'Creates a lifecycle, optionally with phases',
        body: CreateLifecycleBody,
        response: { 200: CreatedLifecycle, ...errorResponses },
      },
      config: manage,
    },
    async (request) => createLifecycle(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/lifecycle',
    {
      schema: {
        tags,
        summary: 'Updates name, description or phase list (a sent list replaces all phases)',
        body: UpdateLifecycleBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updateLifecycle(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/lifecycle',
    {
      schema: {
        tags,
        summary: 'Deletes a lifecycle that no project or channel uses',
        body: LifecycleIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await deleteLifecycle(request.deps, request.principal, request.body.lifecycleId);
      return reply.send();
    },
  );

  app.post(
    '/api/lifecycle/phase',
    {
      schema: {
        tags,
        summary: 'Appends a phase',
        body: CreatePhaseBody,
        response: { 200: CreatedPhase, ...errorResponses },
      },
      config: manage,
    },
    async (request) => addPhase(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/lifecycle/phase',
    {
      schema: {
        tags,
        summary: 'Updates name, requirements, position or environments of a phase',
        body: UpdatePhaseBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updatePhase(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/lifecycle/phase',
    {
      schema: { tags, summary: 'Removes a phase', body: PhaseIdBody, response: errorResponses },
      config: manage,
    },
    async (request, reply) => {
      await deletePhase(request.deps, request.principal, request.body.phaseId);
      return reply.send();
    },
  );

  app.put(
    '/api/lifecycle/phase/environment',
    {
      schema: {
        tags,
        summary: 'Attaches an environment to a phase or changes its trigger mode',
        body: SetPhaseEnvironmentBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await setPhaseEnvironment(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/lifecycle/phase/environment',
    {
      schema: {
        tags,
        summary: 'Removes an environment from a phase',
        body: PhaseEnvironmentBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await removePhaseEnvironment(request.deps, request.principal, request.body);
      return reply.send();
    },
  );
};
