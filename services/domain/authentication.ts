import { hashSecret, InvalidCredentialsError, type Principal } from '../core/index.ts';
import type { DomainDeps } from './deps.ts';
import { principalKey } from './read-caches.ts';

/**
 * Trades a service-account ID and API key for a principal (spec §5); 401/2002 otherwise. From
 * this replica's cache when it has one (read-caches.ts: at most a few seconds old, forgotten when
 * an account, key or workspace is deleted here); refusals are never cached.
 */
export async function authenticate(deps: DomainDeps, serviceAccountId: string, apiKey: string): Promise<Principal> {
  const keyHash = hashSecret(apiKey);
  const load = async (): Promise<Principal | null> => {
    const account = await deps.store.serviceAccounts.findByKeyHash(serviceAccountId, keyHash);
    if (!account) return null;
    // Shared by every request of this key while cached: frozen so that none can change it for the others.
    return Object.freeze({
      serviceAccountId: account.id,
      name: account.name,
      organizationId: account.organizationId,
      workspaceId: account.workspaceId,
      roles: Object.freeze(account.roles.map((role) => Object.freeze({ ...role }))) as Principal['roles'],
    });
  };
  const cache = deps.readCaches?.principals;
  const principal = cache
    ? await cache.getOrLoad(principalKey(serviceAccountId, keyHash), deps.clock.now().getTime(), load)
    : await load();
  if (!principal) throw new InvalidCredentialsError('Invalid service account ID or API key');
  return principal;
}
