/** /api/me, /api/service-account, /api/service-account/api-key, /api/organization/settings (contract §2). */
import { Type } from '@sinclair/typebox';
import { CAPABILITIES, Capability } from '../../../core/index.ts';
import {
  createApiKey,
  createServiceAccount,
  deleteApiKey,
  deleteServiceAccount,
  getMe,
  getOrganizationSettings,
  listApiKeys,
  listServiceAccounts,
  updateOrganizationSettings,
} from '../../../domain/index.ts';
import { errorResponses, Id, Name, Nullable } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';

const RoleSchema = Type.Object({
  role: Type.Union(CAPABILITIES.map((c) => Type.Literal(c))),
  projectIds: Type.Optional(Type.Array(Id, { maxItems: 1000 })),
  environmentIds: Type.Optional(Type.Array(Id, { maxItems: 1000 })),
});

const ServiceAccountSchema = Type.Object({
  serviceAccountId: Id,
  name: Type.String(),
  organizationId: Id,
  workspaceId: Nullable(Id),
  roles: Type.Array(RoleSchema),
});

const MeSchema = Type.Object({
  serviceAccountId: Id,
  name: Type.String(),
  organizationId: Id,
  organizationName: Type.String(),
  workspaceId: Nullable(Id),
  roles: Type.Array(RoleSchema),
});

const Settings = {
  maxParallelMachines: Type.Integer({ minimum: 1, maximum: 1000 }),
  maxConcurrentDeployments: Type.Integer({ minimum: 1, maximum: 100_000 }),
  maxQueuedDeployments: Type.Integer({ minimum: 1, maximum: 1_000_000 }),
};
const SettingsSchema = Type.Object(Settings);
const UpdateSettingsBody = Type.Object({
  maxParallelMachines: Type.Optional(Settings.maxParallelMachines),
  maxConcurrentDeployments: Type.Optional(Settings.maxConcurrentDeployments),
  maxQueuedDeployments: Type.Optional(Settings.maxQueuedDeployments),
});

const tags = ['accounts'];

export const accountRoutes: Routes = async (app) => {
  app.get(
    '/api/me',
    {
      schema: {
        tags,
        summary: 'The calling service account and its organization',
        response: { 200: MeSchema, ...errorResponses },
      },
    },
    async (request) => getMe(request.deps, request.principal),
  );

  app.get(
    '/api/service-account',
    {
      schema: {
        tags,
        summary: 'Lists service accounts',
        querystring: Type.Object({ workspaceId: Type.Optional(Id) }),
        response: {
          200: Type.Object({ serviceAccounts: Type.Array(ServiceAccountSchema), totalCount: Type.Integer() }),
          ...errorResponses,
        },
      },
      config: { capability: Capability.Admin },
    },
    async (request) => {
      const accounts = await listServiceAccounts(request.deps, request.principal, request.query);
      return {
        serviceAccounts: accounts.map((a) => ({
          serviceAccountId: a.id,
          name: a.name,
          organizationId: a.organizationId,
          workspaceId: a.workspaceId,
          roles: a.roles,
        })),
        totalCount: accounts.length,
      };
    },
  );

  app.post(
    '/api/service-account',
    {
      schema: {
        tags,
        summary: 'Creates a service account',
        body: Type.Object({
          workspaceId: Type.Optional(Nullable(Id)),
          name: Name,
          roles: Type.Array(RoleSchema, { maxItems: 100 }),
        }),
        response: { 200: Type.Object({ serviceAccountId: Id }), ...errorResponses },
      },
      config: { capability: Capability.Admin },
    },
    async (request) => createServiceAccount(request.deps, request.principal, request.body),
  );

  app.delete(
    '/api/service-account',
    {
      schema: {
        tags,
        summary: 'Deletes a service account and its keys',
        body: Type.Object({ serviceAccountId: Id }),
        response: errorResponses,
      },
      config: { capability: Capability.Admin },
    },
    async (request, reply) => {
      await deleteServiceAccount(request.deps, request.principal, request.body.serviceAccountId);
      return reply.send();
    },
  );

  app.get(
    '/api/service-account/api-key',
    {
      schema: {
        tags,
        summary: 'Lists the API keys of a service account (never the keys themselves)',
        querystring: Type.Object({ serviceAccountId: Id }),
        response: {
          200: Type.Object({
            apiKeys: Type.Array(Type.Object({ apiKeyId: Id, createdUtc: Type.String() })),
            totalCount: Type.Integer(),
          }),
          ...errorResponses,
        },
      },
      config: { capability: Capability.Admin },
    },
    async (request) => {
      const keys = await listApiKeys(request.deps, request.principal, request.query.serviceAccountId);
      return {
        apiKeys: keys.map((k) => ({ apiKeyId: k.id, createdUtc: k.createdUtc.toISOString() })),
        totalCount: keys.length,
      };
    },
  );

  app.post(
    '/api/service-account/api-key',
    {
      schema: {
        tags,
        summary: 'Creates an API key; the key is shown only in this response',
        body: Type.Object({ serviceAccountId: Id }),
        response: { 200: Type.Object({ apiKeyId: Id, apiKey: Type.String() }), ...errorResponses },
      },
      config: { capability: Capability.Admin },
    },
    async (request) => createApiKey(request.deps, request.principal, request.body.serviceAccountId),
  );

  app.delete(
    '/api/service-account/api-key',
    {
      schema: { tags, summary: 'Revokes an API key', body: Type.Object({ apiKeyId: Id }), response: errorResponses },
      config: { capability: Capability.Admin },
    },
    async (request, reply) => {
      await deleteApiKey(request.deps, request.principal, request.body.apiKeyId);
      return reply.send();
    },
  );

  app.get(
    '/api/organization/settings',
    {
      schema: { tags, summary: 'Organization limits', response: { 200: SettingsSchema, ...errorResponses } },
      config: { capability: Capability.Admin },
    },
    async (request) => getOrganizationSettings(request.deps, request.principal),
  );

  app.put(
    '/api/organization/settings',
    {
      schema: { tags, summary: 'Changes organization limits', body: UpdateSettingsBody, response: errorResponses },
      config: { capability: Capability.Admin },
    },
    async (request, reply) => {
      await updateOrganizationSettings(request.deps, request.principal, request.body);
      return reply.send();
    },
  );
};
