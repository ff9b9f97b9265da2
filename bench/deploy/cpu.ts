/**
 * CPU time from /proc (Linux), to show where a deployment's CPU goes on this machine: the control
 * plane, the agents, the scripts they ran, and everything else (PostgreSQL, the bench's client).
 * Clock ticks are 10 ms, so figures are meaningful summed over many processes and iterations.
 */
import { readFileSync } from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

/** Milliseconds of CPU a process used itself, and its waited-for children (an agent's scripts). */
export function processCpu(pid: number): { self: number; children: number } {
  try {
    // Fields after the command name (which may hold spaces) start at state = field 3.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = (n: number) => Number(fields[n - 3]);
    return { self: (at(14) + at(15)) * TICK_MS, children: (at(16) + at(17)) * TICK_MS };
  } catch {
    return { self: 0, children: 0 };
  }
}

/** Milliseconds all cores spent busy since boot (everything but idle and iowait). */
export function machineBusy(): number {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = values.map(Number);
  return (user + nice + system + irq + softirq + steal) * TICK_MS;
}

export interface CpuSplit {
  machine: number;
  controlPlane: number;
  agents: number;
  scripts: number;
}

/** CPU used between two snapshots by the control plane, the agents and their scripts. */
export function snapshot(planePid: number, agentPids: readonly number[]): CpuSplit {
  let agents = 0;
  let scripts = 0;
  for (const pid of agentPids) {
    const cpu = processCpu(pid);
    agents += cpu.self;
    scripts += cpu.children;
  }
  return { machine: machineBusy(), controlPlane: processCpu(planePid).self, agents, scripts };
}

export const NO_CPU: CpuSplit = { machine: 0, controlPlane: 0, agents: 0, scripts: 0 };

/** a + sign × b, field by field. */
export function combine(a: CpuSplit, b: CpuSplit, sign: 1 | -1): CpuSplit {
  return {
    machine: a.machine + sign * b.machine,
    controlPlane: a.controlPlane + sign * b.controlPlane,
    agents: a.agents + sign * b.agents,
    scripts: a.scripts + sign * b.scripts,
  };
}
