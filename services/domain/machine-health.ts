/**
 * A machine's health (issue #17, a Gantry extension beside the spec's status): Online, Offline or
 * Unhealthy — online, but its agent reports too little room in its home, or it runs an agent
 * version older than this control plane supports, or its agent failed the upgrade it was asked for
 * (POST /api/machine/upgrade) — with the reasons in words.
 */
import { compareSemVer, isValidSemVer } from '../core/index.ts';
import type { Machine } from '../store/index.ts';
import { machineStatus, MachineStatus } from './machines.ts';

// Written out (not spread from MachineStatus): machines.ts imports this module too.
export const MachineHealth = {
  Pending: 'Pending',
  Online: 'Online',
  Offline: 'Offline',
  Unhealthy: 'Unhealthy',
} as const;
export type MachineHealth = (typeof MachineHealth)[keyof typeof MachineHealth];

export interface MachineHealthLimits {
  /** Below this many bytes free in the agent's home the machine is Unhealthy (packages unpack there). */
  minFreeBytes: number;
  /** An agent older than this is Unhealthy: it lacks what this control plane relies on. */
  minAgentVersion: string;
}

export const DEFAULT_MACHINE_HEALTH_LIMITS: MachineHealthLimits = {
  minFreeBytes: 1024 * 1024 * 1024,
  minAgentVersion: '0.1.0',
};

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(1)} GiB`;

export function machineHealth(
  machine: Machine,
  now: Date,
  limits: MachineHealthLimits = DEFAULT_MACHINE_HEALTH_LIMITS,
): { health: MachineHealth; reasons: string[] } {
  const status = machineStatus(machine, now);
  if (status !== MachineStatus.Online) {
    const reasons =
      status === MachineStatus.Pending
        ? ['no agent has registered yet']
        : ['its agent has not been heard from recently'];
    return { health: status, reasons };
  }
  const reasons: string[] = [];
  if (machine.homeFreeBytes !== null && machine.homeFreeBytes < limits.minFreeBytes) {
    reasons.push(`${gib(machine.homeFreeBytes)} free in the agent's home, below ${gib(limits.minFreeBytes)}`);
  }
  const version = machine.agentVersion;
  if (version !== null && (!isValidSemVer(version) || compareSemVer(version, limits.minAgentVersion) < 0)) {
    reasons.push(`agent ${version} is older than ${limits.minAgentVersion}, the oldest this control plane supports`);
  }
  // The old agent goes on working, but the fleet is not what the operator asked for.
  if (machine.upgrade?.state === 'Failed') {
    reasons.push(
      `its upgrade to agent ${machine.upgrade.version} failed: ${machine.upgrade.message ?? 'no reason given'}`,
    );
  }
  return { health: reasons.length > 0 ? MachineHealth.Unhealthy : MachineHealth.Online, reasons };
}
