// What the agent tells the control plane about its host, for the machine's health: which script
// interpreters are installed, and how much room its home has (packages unpack and scripts run there).
import { statfsSync } from 'node:fs';
import { findExecutable } from './steps/index.ts';

/** The interpreters the agent can run scripts with (agent/steps/interpreters.ts). */
const INTERPRETERS = ['bash', 'sh', 'python3', 'pwsh'] as const;

export interface HostHealth {
  readonly interpreters: string[];
  /** Decimal string (an int64 on the wire); '0' when the file system could not be asked. */
  readonly homeFreeBytes: string;
}

export function interpretersOnPath(searchPath: string | undefined): string[] {
  return INTERPRETERS.filter((command) => findExecutable(command, searchPath) !== undefined);
}

/** Bytes an unprivileged process may still write on the file system holding `dir`. */
export function freeBytes(dir: string): string {
  try {
    const stats = statfsSync(dir, { bigint: true });
    return String(stats.bavail * stats.bsize);
  } catch {
    return '0';
  }
}

export function hostHealth(homeDir: string, searchPath: string | undefined): HostHealth {
  return { interpreters: interpretersOnPath(searchPath), homeFreeBytes: freeBytes(homeDir) };
}
