/** /api/project/channel(s) (spec §4.12, contract §3). */
import { Capability } from '../../../core/index.ts';
import { createChannel, deleteChannel, listChannels, updateChannel } from '../../../domain/index.ts';
import type { Channel } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  ChannelIdBody,
  ChannelList,
  CreateChannelBody,
  CreatedChannel,
  ProjectIdQuery,
  UpdateChannelBody,
} from './schemas.ts';

const tags = ['channels'];

export function toChannelDto(c: Channel) {
  return {
    channelId: c.id,
    projectId: c.projectId,
    name: c.name,
    description: c.description,
    lifecycleId: c.lifecycleId,
    isDefault: c.isDefault,
    versionRange: c.versionRange,
    preReleaseTag: c.preReleaseTag,
    packageRules: c.packageRules,
  };
}

export const channelRoutes: Routes = async (app) => {
  app.get(
    '/api/project/channels',
    {
      schema: {
        tags,
        summary: 'Lists channels of a project with version rules',
        querystring: ProjectIdQuery,
        response: { 200: ChannelList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const result = await listChannels(request.deps, request.principal, request.query.projectId);
      return {
        projectId: result.projectId,
        channels: result.channels.map(toChannelDto),
        totalCount: result.channels.length,
      };
    },
  );

  app.post(
    '/api/project/channel',
    {
      schema: {
        tags,
        summary: 'Creates a channel, optionally gating accepted release and package versions',
        body: CreateChannelBody,
        response: { 200: CreatedChannel, ...errorResponses },
      },
      config: { capability: Capability.EditProject },
    },
    async (request) => createChannel(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/project/channel',
    {
      schema: {
        tags,
        summary: 'Updates channel name, description, lifecycle binding, default flag, version rules',
        body: UpdateChannelBody,
        response: errorResponses,
      },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await updateChannel(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/project/channel',
    {
      schema: { tags, summary: 'Deletes a channel', body: ChannelIdBody, response: errorResponses },
      config: { capability: Capability.EditProject },
    },
    async (request, reply) => {
      await deleteChannel(request.deps, request.principal, request.body.channelId);
      return reply.send();
    },
  );
};
