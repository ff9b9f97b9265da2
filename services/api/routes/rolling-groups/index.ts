/** /api/project/rolling-group(s) and /api/project/step/rolling-group (spec §2.5, §4.10): EditProject. */
import { Capability } from '../../../core/index.ts';
import {
  createRollingGroup,
  deleteRollingGroup,
  listRollingGroups,
  moveStepToRollingGroup,
  updateRollingGroup,
  type RollingGroup,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedRollingGroup,
  CreateRollingGroupBody,
  MoveStepBody,
  ProjectIdQuery,
  RollingGroupIdBody,
  RollingGroupList,
  UpdateRollingGroupBody,
} from './schemas.ts';

const tags = ['rolling groups'];

function toRollingGroupDto(g: RollingGroup) {
  return {
    rollingGroupId: g.id,
    projectId: g.projectId,
    name: g.name,
    order: g.order,
    windowSize: g.windowSize,
    machineOrder: g.machineOrder,
    machineOrderTagIds: g.machineOrderTagIds,
    waitBetweenMachineGroups: g.waitBetweenMachineGroups,
    onMachineFailure: g.onMachineFailure,
    onMemberFailure: g.onMemberFailure,
    onNoTargets: g.onNoTargets,
    memberStepIds: g.memberStepIds,
  };
}

export const rollingGroupRoutes: Routes = async (app) => {
  app.get(
    '/api/project/rolling-groups',
    {
      schema: {
        tags,
        summary: "Lists a project's rolling groups by order",
        querystring: ProjectIdQuery,
        response: { 200: RollingGroupList, ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => {
      const { projectId, rollingGroups } = await listRollingGroups(
        request.deps,
        request.principal,
        request.query.projectId,
      );
      return { projectId, rollingGroups: rollingGroups.map(toRollingGroupDto) };
    },
  );

  app.post(
    '/api/project/rolling-group',
    {
      schema: {
        tags,
        summary: 'Groups a consecutive run of steps',
        body: CreateRollingGroupBody,
        response: { 200: CreatedRollingGroup, ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => createRollingGroup(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project/rolling-group',
    {
      schema: {
        tags,
        summary: "Changes a group's own settings; membership unchanged",
        body: UpdateRollingGroupBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await updateRollingGroup(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/rolling-group',
    {
      schema: {
        tags,
        summary: 'Dissolves a group; its steps are kept and released',
        body: RollingGroupIdBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await deleteRollingGroup(request.deps, request.principal, request.body.rollingGroupId);
      return reply.send();
    },
  );

  app.put(
    '/api/project/step/rolling-group',
    {
      schema: { tags, summary: 'Moves one step into or out of a group', body: MoveStepBody, response: errorResponses },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await moveStepToRollingGroup(request.deps, request.principal, request.body);
      return reply.send();
    },
  );
};
