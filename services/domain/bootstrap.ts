/**
 * First start (contract §2): seed the installation and make sure the organization-wide Admin
 * account exists. Credentials from the environment are authoritative on every start; otherwise
 * they are generated once, on the start that creates the installation.
 */
import { Capability, hashSecret, newId, newSecret } from '../core/index.ts';
import type { DomainDeps } from './deps.ts';

export interface BootstrapOptions {
  accountId: string | null;
  apiKey: string | null;
}

export interface BootstrapResult {
  organizationId: string;
  /** Present only when this start generated the Admin credentials; shown once, never stored in clear. */
  generated: { serviceAccountId: string; apiKey: string } | null;
}

export async function bootstrap(deps: DomainDeps, options: BootstrapOptions): Promise<BootstrapResult> {
  const { organizationId, created } = await deps.store.seed();
  const admin = { organizationId, workspaceId: null, name: 'Admin', roles: [{ role: Capability.Admin }] };
  if (options.accountId && options.apiKey) {
    const { accountId, apiKey } = options;
    await deps.store.transaction(async (tx) => {
      await tx.serviceAccounts.upsert({ ...admin, id: accountId });
      await tx.serviceAccounts.insertApiKey({ id: newId(), serviceAccountId: accountId, keyHash: hashSecret(apiKey) });
    });
    return { organizationId, generated: null };
  }
  if (!created) return { organizationId, generated: null };
  const serviceAccountId = newId();
  const apiKey = newSecret();
  await deps.store.transaction(async (tx) => {
    await tx.serviceAccounts.insert({ ...admin, id: serviceAccountId });
    await tx.serviceAccounts.insertApiKey({ id: newId(), serviceAccountId, keyHash: hashSecret(apiKey) });
  });
  return { organizationId, generated: { serviceAccountId, apiKey } };
}
