// Signals for a script's whole process group (the script and everything it started), and the
// Linux start time that tells a pid of ours from a reused one after an agent restart.
import { readFileSync } from 'node:fs';

/** Sends `signal` to process group `pgid`; false when the group no longer exists. */
export function signalProcessGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

/** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22); undefined elsewhere. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: split after the LAST ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19];
  } catch {
    return undefined;
  }
}

/**
 * Kills a group left running by a previous agent process, only when its leader is still the same
 * process (same start ticks): a bare pid may have been reused by an unrelated program.
 */
export function killOrphanGroup(pgid: number, startTicks: string | undefined): boolean {
  if (startTicks === undefined || processStartTicks(pgid) !== startTicks) return false;
  return signalProcessGroup(pgid, 'SIGKILL');
}
