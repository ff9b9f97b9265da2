/**
 * Agent identity (contract §3): an agent trades the one-time registration token that machines.ts
 * issued for a credential of its own, then proves itself with machine ID + credential. Issuing and
 * redeeming are one rule in one place; the gateway only carries the secrets. Only SHA-256 hashes of
 * both secrets are stored; neither is ever logged.
 */
import { hashSecret, newSecret, type Clock } from '../core/index.ts';
import type { Store } from '../store/index.ts';

/** The slice of the store agent identity needs. */
export interface AgentIdentityStore {
  machines: Pick<
    Store['machines'],
    'findByRegistrationTokenHash' | 'completeRegistration' | 'findByCredentialHash' | 'findByCredentialHashes'
  >;
}

export type AgentMachine = NonNullable<Awaited<ReturnType<AgentIdentityStore['machines']['findByCredentialHash']>>>;

/** What a registering agent says about itself: free text, clipped before it reaches the database. */
export interface AgentSelfReport {
  readonly hostname: string;
  readonly os: string;
  readonly agentVersion: string;
}

function clip(value: string): string | undefined {
  return value === '' ? undefined : value.slice(0, 200);
}

/** The new machine ID and credential, or null when the token is unknown, already used or expired. */
export async function redeemRegistrationToken(
  store: AgentIdentityStore,
  clock: Clock,
  token: string,
  report: AgentSelfReport,
): Promise<{ machineId: string; credential: string } | null> {
  const now = clock.now();
  const machine = await store.machines.findByRegistrationTokenHash(hashSecret(token), now);
  if (!machine) return null;
  const credential = newSecret();
  const info = { hostname: clip(report.hostname), os: clip(report.os), agentVersion: clip(report.agentVersion) };
  // completeRegistration clears the token only if it is still pending: of two concurrent
  // registrations with one token, exactly one wins.
  if (!(await store.machines.completeRegistration(machine.id, hashSecret(credential), info, now))) return null;
  return { machineId: machine.id, credential };
}

/** The machine that `credential` belongs to, if it is `machineId`. */
export async function machineForCredential(
  store: AgentIdentityStore,
  machineId: string,
  credential: string,
): Promise<AgentMachine | null> {
  const machine = await store.machines.findByCredentialHash(hashSecret(credential));
  return machine && machine.id === machineId ? machine : null;
}
