import { hashSecret, InvalidCredentialsError, type Principal } from '../core/index.ts';
import type { DomainDeps } from './deps.ts';

/** Trades a service-account ID and API key for a principal (spec §5); 401/2002 otherwise. */
export async function authenticate(deps: DomainDeps, serviceAccountId: string, apiKey: string): Promise<Principal> {
  const account = await deps.store.serviceAccounts.findByKeyHash(serviceAccountId, hashSecret(apiKey));
  if (!account) throw new InvalidCredentialsError('Invalid service account ID or API key');
  return {
    serviceAccountId: account.id,
    name: account.name,
    organizationId: account.organizationId,
    workspaceId: account.workspaceId,
    roles: account.roles,
  };
}
