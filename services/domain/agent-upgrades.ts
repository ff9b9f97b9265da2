/**
 * Agent upgrades from the control plane (issue #17, POST /api/machine/upgrade): a workspace admin
 * asks the agents of some machines (by ID, or all of an environment's) to upgrade to the agent
 * version this control plane ships. The request is stored on each machine; the replica holding the
 * agent's session sends it (at once, or at the agent's next Hello when it is offline), and what the
 * agent reports (Started, Failed with its reason) or the version it comes back with (Succeeded)
 * is recorded there and shown in the machine's health.
 */
import { authorize, Capability, InvalidParameterError, unknownId, type Principal } from '../core/index.ts';
import type { Machine } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { isAgentOnline } from './machines.ts';
import { visibleWorkspace } from './scope.ts';

/** What the request did for one machine. */
export type UpgradeOutcome =
  /** Asked; its agent is connected and is told now. */
  | 'Requested'
  /** Asked; its agent is not connected and is told when it next connects. */
  | 'Queued'
  /** Its agent already runs this version. */
  | 'UpToDate'
  /** No agent has registered for it yet. */
  | 'NotRegistered';

export interface UpgradeRequestResult {
  version: string;
  machines: Array<{ machine: Machine; outcome: UpgradeOutcome }>;
}

const MAX_MACHINES = 1000;

/** The machines a request names, checked (same workspace, the caller may manage them); writes nothing. */
export async function machinesToUpgrade(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; machineIds?: string[] | undefined; environmentId?: string | undefined },
): Promise<Machine[]> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const ids = [...new Set(input.machineIds ?? [])];
  if (ids.length === 0 && input.environmentId === undefined)
    throw new InvalidParameterError('Name the machines: machineIds, environmentId, or both', [
      { property: 'machineIds', messages: ['machineIds or environmentId is required'] },
    ]);
  const chosen = new Map<string, Machine>();
  for (const id of ids) {
    const machine = await deps.store.machines.get(id);
    if (!machine || machine.workspaceId !== workspace.id) throw unknownId('machineIds');
    chosen.set(machine.id, machine);
  }
  if (input.environmentId !== undefined) {
    const [environment] = await deps.store.environments.getMany(workspace.id, [input.environmentId]);
    if (!environment) throw unknownId('environmentId');
    for (const machine of await deps.store.machines.listInEnvironment(workspace.id, environment.id))
      chosen.set(machine.id, machine);
  }
  if (chosen.size > MAX_MACHINES)
    throw new InvalidParameterError(`At most ${MAX_MACHINES} machines per request`, [
      { property: 'machineIds', messages: [`at most ${MAX_MACHINES} machines`] },
    ]);
  // A role limited to some environments upgrades only machines wholly inside them.
  for (const machine of chosen.values()) {
    const environmentIds = machine.environments.map((e) => e.id);
    authorize(principal, Capability.ManageWorkspace, environmentIds.length > 0 ? { environmentIds } : {});
  }
  return [...chosen.values()];
}

/** Asks those of the machines whose agent does not run `version` to upgrade to it, and wakes their replicas. */
export async function requestAgentUpgrade(
  deps: DomainDeps,
  chosen: readonly Machine[],
  version: string,
): Promise<UpgradeRequestResult> {
  const now = deps.clock.now();
  const machines: UpgradeRequestResult['machines'] = [];
  const asked: string[] = [];
  for (const machine of chosen) {
    let outcome: UpgradeOutcome;
    if (!machine.isRegistered) outcome = 'NotRegistered';
    else if (machine.agentVersion === version) outcome = 'UpToDate';
    else {
      outcome = isAgentOnline(machine, now) ? 'Requested' : 'Queued';
      asked.push(machine.id);
    }
    machines.push({ machine, outcome });
  }
  await deps.store.machines.requestUpgrade(asked, version, now);
  if (asked.length > 0) await deps.upgradeAgents?.(asked);
  // One after another: inside the request's transaction they share its one connection.
  const reread = new Map<string, Machine | null>();
  for (const id of asked) reread.set(id, await deps.store.machines.get(id));
  return {
    version,
    machines: machines.map(({ machine, outcome }) => ({ machine: reread.get(machine.id) ?? machine, outcome })),
  };
}
