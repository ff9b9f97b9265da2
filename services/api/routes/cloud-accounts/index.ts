/** /api/cloud-account (contract §3): configs are sealed at rest; secrets are never returned. */
import { Capability } from '../../../core/index.ts';
import {
  createCloudAccount,
  deleteCloudAccount,
  getCloudAccount,
  listCloudAccounts,
  updateCloudAccount,
  type CloudAccountView,
} from '../../../domain/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CloudAccountIdBody,
  CloudAccountIdQuery,
  CloudAccountList,
  CloudAccountSchema,
  CreateCloudAccountBody,
  CreatedCloudAccount,
  ListCloudAccountsQuery,
  UpdateCloudAccountBody,
} from './schemas.ts';

const tags = ['cloud accounts'];

function toCloudAccountDto(a: CloudAccountView) {
  return { cloudAccountId: a.id, workspaceId: a.workspaceId, name: a.name, type: a.type, config: a.config };
}

export const cloudAccountRoutes: Routes = async (app) => {
  app.get(
    '/api/cloud-account',
    {
      schema: {
        tags,
        summary: 'Lists cloud accounts of a workspace (secrets shown as null)',
        querystring: ListCloudAccountsQuery,
        response: { 200: CloudAccountList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listCloudAccounts(request.deps, request.principal, request.query);
      return { cloudAccounts: page.items.map(toCloudAccountDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/cloud-account/details',
    {
      schema: {
        tags,
        summary: 'Reads one cloud account (secrets shown as null)',
        querystring: CloudAccountIdQuery,
        response: { 200: CloudAccountSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) =>
      toCloudAccountDto(await getCloudAccount(request.deps, request.principal, request.query.cloudAccountId)),
  );

  app.post(
    '/api/cloud-account',
    {
      schema: {
        tags,
        summary: 'Creates a cloud account; its config is encrypted at rest',
        body: CreateCloudAccountBody,
        response: { 200: CreatedCloudAccount, ...errorResponses },
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request) => createCloudAccount(request.deps, request.principal, request.body),
  );

  app.put(
    '/api/cloud-account',
    {
      schema: {
        tags,
        summary:
          'Updates a cloud account; config replaces the stored one, except secret properties sent as null, which are kept',
        body: UpdateCloudAccountBody,
        response: errorResponses,
      },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await updateCloudAccount(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/cloud-account',
    {
      schema: { tags, summary: 'Deletes a cloud account', body: CloudAccountIdBody, response: errorResponses },
      config: { capability: Capability.ManageWorkspace },
    },
    async (request, reply) => {
      await deleteCloudAccount(request.deps, request.principal, request.body.cloudAccountId);
      return reply.send();
    },
  );
};
