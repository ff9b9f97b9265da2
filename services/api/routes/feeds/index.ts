/** /api/feed (contract §3, §6). */
import { Capability } from '../../../core/index.ts';
import { createFeed, deleteFeed, getFeed, listFeeds, updateFeed, type FeedView } from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreatedFeed,
  CreateFeedBody,
  FeedIdBody,
  FeedIdQuery,
  FeedList,
  FeedSchema,
  ListFeedsQuery,
  UpdateFeedBody,
} from './schemas.ts';

const tags = ['feeds'];

function toFeedDto(f: FeedView) {
  return {
    feedId: f.id,
    workspaceId: f.workspaceId,
    name: f.name,
    feedType: f.feedType,
    url: f.url,
    isBuiltin: f.isBuiltin,
    hasPassword: f.hasPassword,
  };
}

export const feedRoutes: Routes = async (app) => {
  app.get(
    '/api/feed',
    {
      schema: {
        tags,
        summary: 'Lists feeds of a workspace, the built-in feed first',
        querystring: ListFeedsQuery,
        response: { 200: FeedList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listFeeds(request.deps, request.principal, request.query);
      return { feeds: page.items.map(toFeedDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/feed/details',
    {
      schema: {
        tags,
        summary: 'Reads one feed',
        querystring: FeedIdQuery,
        response: { 200: FeedSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => toFeedDto(await getFeed(request.deps, request.principal, request.query.feedId)),
  );

  app.post(
    '/api/feed',
    {
      schema: {
        tags,
        summary: 'Adds an external feed; credentials are encrypted and never returned',
        body: CreateFeedBody,
        response: { 200: CreatedFeed, ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createFeed(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/feed',
    {
      schema: {
        tags,
        summary: 'Updates an external feed (null clears a credential); the built-in feed cannot change',
        body: UpdateFeedBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateFeed(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/feed',
    {
      schema: {
        tags,
        summary: 'Deletes an external feed; the built-in feed cannot be deleted',
        body: FeedIdBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteFeed(request.deps, request.principal, request.body.feedId);
      return reply.send();
    },
  );
};
