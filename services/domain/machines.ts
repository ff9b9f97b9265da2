/**
 * Machines (contract §3): created here with a one-time registration token; an agent started with
 * that token trades it (through the gateway) for its own credential and is the machine from then on.
 */
import {
  authorize,
  Capability,
  hashSecret,
  InvalidParameterError,
  newId,
  newSecret,
  toPage,
  unknownId,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { Machine } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';
import { requireTags } from './tags.ts';
import { DEFAULT_MACHINE_HEALTH_LIMITS, machineHealth, type MachineHealth } from './machine-health.ts';

/** How long a registration token may wait for its agent. */
export const REGISTRATION_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;

/** A machine is Online while its agent's last heartbeat is younger than this (agents beat every 15 s). */
export const HEARTBEAT_WINDOW_MS = 90_000;

export const MachineStatus = { Pending: 'Pending', Online: 'Online', Offline: 'Offline' } as const;
export type MachineStatus = (typeof MachineStatus)[keyof typeof MachineStatus];

/**
 * The one rule for "its agent is there": registered, in a session (a session that ended marks the
 * machine offline at once), and heard from recently (a session whose link died silently is only
 * noticed by keepalive, so the last heartbeat still counts).
 */
export function isAgentOnline(
  machine: Pick<Machine, 'isRegistered' | 'lastSeenUtc' | 'disconnectedUtc'>,
  now: Date,
): boolean {
  return (
    machine.isRegistered &&
    machine.disconnectedUtc === null &&
    machine.lastSeenUtc !== null &&
    now.getTime() - machine.lastSeenUtc.getTime() < HEARTBEAT_WINDOW_MS
  );
}

export function machineStatus(machine: Machine, now: Date): MachineStatus {
  if (!machine.isRegistered) return MachineStatus.Pending;
  return isAgentOnline(machine, now) ? MachineStatus.Online : MachineStatus.Offline;
}

export interface MachineView extends Machine {
  status: MachineStatus;
  health: MachineHealth;
  healthReasons: string[];
}

/** A stored machine with its status and health as of now. */
export const withStatus = (deps: DomainDeps, machine: Machine): MachineView => {
  const now = deps.clock.now();
  const { health, reasons } = machineHealth(machine, now, deps.machineHealth ?? DEFAULT_MACHINE_HEALTH_LIMITS);
  return { ...machine, status: machineStatus(machine, now), health, healthReasons: reasons };
};

async function visibleMachine(deps: DomainDeps, principal: Principal, machineId: string): Promise<Machine> {
  return visibleResource(deps, principal, deps.store.machines.get(machineId), 'machineId');
}

/** Checks every ID names a live environment of the workspace; returns them de-duplicated. */
async function requireEnvironments(
  deps: DomainDeps,
  workspaceId: string,
  ids: readonly string[],
  property: string,
): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await deps.store.environments.getMany(workspaceId, unique);
  if (found.length !== unique.length) throw unknownId(property);
  return unique;
}

/** A role limited to some environments may only manage machines wholly inside them. */
function authorizeManage(principal: Principal, environmentIds: readonly string[]): void {
  authorize(principal, Capability.ManageWorkspace, environmentIds.length > 0 ? { environmentIds } : {});
}

async function issueToken(deps: DomainDeps): Promise<{ token: string; tokenHash: string; expiresAt: Date }> {
  const token = newSecret();
  return {
    token,
    tokenHash: hashSecret(token),
    expiresAt: new Date(deps.clock.now().getTime() + REGISTRATION_TOKEN_TTL_MS),
  };
}

export async function listMachines(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<MachineView>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const page = await deps.store.machines.list(workspace.id, toPage(query));
  return { items: page.items.map((m) => withStatus(deps, m)), totalCount: page.totalCount };
}

export async function getMachine(deps: DomainDeps, principal: Principal, machineId: string): Promise<MachineView> {
  const machine = await visibleMachine(deps, principal, machineId);
  authorize(principal, Capability.View);
  return withStatus(deps, machine);
}

export async function createMachine(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; name: string; environmentIds?: string[] | undefined; tagIds?: string[] | undefined },
): Promise<{ machineId: string; registrationToken: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const environmentIds = await requireEnvironments(deps, workspace.id, input.environmentIds ?? [], 'environmentIds');
  authorizeManage(principal, environmentIds);
  const tagIds = [...new Set(input.tagIds ?? [])];
  await requireTags(deps, workspace.id, tagIds);
  const registration = await issueToken(deps);
  const machineId = newId();
  await withUniqueName('name', input.name, () =>
    deps.store.transaction((tx) =>
      tx.machines.insert(
        { id: machineId, workspaceId: workspace.id, name: input.name, tagIds, environmentIds },
        registration,
      ),
    ),
  );
  return { machineId, registrationToken: registration.token };
}

export async function updateMachine(
  deps: DomainDeps,
  principal: Principal,
  input: { machineId: string; name?: string | undefined; tagIds?: string[] | undefined; enabled?: boolean | undefined },
): Promise<void> {
  const machine = await visibleMachine(deps, principal, input.machineId);
  authorizeManage(
    principal,
    machine.environments.map((e) => e.id),
  );
  const tagIds = input.tagIds === undefined ? undefined : [...new Set(input.tagIds)];
  if (tagIds) await requireTags(deps, machine.workspaceId, tagIds);
  await withUniqueName('name', input.name ?? machine.name, () =>
    deps.store.machines.update(machine.id, { name: input.name, tagIds, enabled: input.enabled }),
  );
}

export async function deleteMachine(deps: DomainDeps, principal: Principal, machineId: string): Promise<void> {
  const machine = await visibleMachine(deps, principal, machineId);
  authorizeManage(
    principal,
    machine.environments.map((e) => e.id),
  );
  await deps.store.machines.delete(machine.id);
}

/**
 * Issues a fresh one-time registration token (re-registration: a reinstalled agent, or a lost
 * token). The current agent keeps working until the new token is used; then its credential is replaced.
 */
export async function renewRegistrationToken(
  deps: DomainDeps,
  principal: Principal,
  machineId: string,
): Promise<{ registrationToken: string }> {
  const machine = await visibleMachine(deps, principal, machineId);
  authorizeManage(
    principal,
    machine.environments.map((e) => e.id),
  );
  const registration = await issueToken(deps);
  await deps.store.machines.setRegistrationToken(machine.id, registration.tokenHash, registration.expiresAt);
  return { registrationToken: registration.token };
}

export async function getMachineEnvironments(
  deps: DomainDeps,
  principal: Principal,
  machineId: string,
): Promise<Machine> {
  const machine = await visibleMachine(deps, principal, machineId);
  authorize(principal, Capability.View);
  return machine;
}

export async function setMachineEnvironments(
  deps: DomainDeps,
  principal: Principal,
  input: { machineId: string; environmentIds: string[] },
): Promise<void> {
  const machine = await visibleMachine(deps, principal, input.machineId);
  const environmentIds = await requireEnvironments(deps, machine.workspaceId, input.environmentIds, 'environmentIds');
  authorizeManage(principal, [...new Set([...machine.environments.map((e) => e.id), ...environmentIds])]);
  await deps.store.transaction((tx) => tx.machines.setEnvironments(machine.id, environmentIds));
}

export async function addMachineEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: { machineId: string; environmentId: string },
): Promise<void> {
  const machine = await visibleMachine(deps, principal, input.machineId);
  const [environmentId] = await requireEnvironments(deps, machine.workspaceId, [input.environmentId], 'environmentId');
  if (environmentId === undefined) throw unknownId('environmentId');
  authorizeManage(principal, [environmentId]);
  await deps.store.machines.addEnvironment(machine.id, environmentId);
}

export async function removeMachineEnvironment(
  deps: DomainDeps,
  principal: Principal,
  input: { machineId: string; environmentId: string },
): Promise<void> {
  const machine = await visibleMachine(deps, principal, input.machineId);
  if (!machine.environments.some((e) => e.id === input.environmentId)) {
    throw new InvalidParameterError(`Machine '${machine.name}' is not in environment ${input.environmentId}`, [
      { property: 'environmentId', messages: ['not assigned to this machine'] },
    ]);
  }
  authorizeManage(principal, [input.environmentId]);
  await deps.store.machines.removeEnvironment(machine.id, input.environmentId);
}
