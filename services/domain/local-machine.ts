/**
 * The quickstart's own machine (`npm start -- --local-agent`): the control plane enrolls an agent
 * on the computer it runs on, in the bootstrap workspace and all its environments, so a newcomer's
 * first deployment needs no second machine. A system action at start-up (no caller to authorize),
 * like bootstrap. Idempotent: a later start finds the machine by name and only renews its token
 * when the agent has no identity yet.
 */
import { hashSecret, newId, newSecret } from '../core/index.ts';
import type { DomainDeps } from './deps.ts';
import { REGISTRATION_TOKEN_TTL_MS } from './machines.ts';

/** The workspace the first start seeds (store/seed.ts). */
const BOOTSTRAP_WORKSPACE = 'Main';

export async function enrollLocalMachine(
  deps: DomainDeps,
  input: { name: string },
): Promise<{ machineId: string; workspaceId: string; registrationToken: string }> {
  const { organizationId } = await deps.store.seed();
  const workspace =
    (await deps.store.workspaces.findByName(organizationId, BOOTSTRAP_WORKSPACE)) ??
    (await deps.store.workspaces.list(organizationId, null))[0];
  if (!workspace) throw new Error('No workspace to put the local machine in');
  const token = newSecret();
  const registration = {
    tokenHash: hashSecret(token),
    expiresAt: new Date(deps.clock.now().getTime() + REGISTRATION_TOKEN_TTL_MS),
  };
  const existing = await deps.store.machines.findByName(workspace.id, input.name);
  if (existing) {
    await deps.store.machines.setRegistrationToken(existing.id, registration.tokenHash, registration.expiresAt);
    return { machineId: existing.id, workspaceId: workspace.id, registrationToken: token };
  }
  const environmentIds = (await deps.store.environments.listAll(workspace.id)).map((e) => e.id);
  const machineId = newId();
  await deps.store.transaction((tx) =>
    tx.machines.insert(
      { id: machineId, workspaceId: workspace.id, name: input.name, tagIds: [], environmentIds },
      registration,
    ),
  );
  return { machineId, workspaceId: workspace.id, registrationToken: token };
}
