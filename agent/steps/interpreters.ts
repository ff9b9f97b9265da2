// Which program runs a script of each language, and whether it is installed on this machine.
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

export interface Interpreter {
  readonly command: string;
  readonly fileExtension: string;
  readonly args: (scriptFile: string) => string[];
}

const BASH: Interpreter = { command: 'bash', fileExtension: '.sh', args: (file) => ['--noprofile', '--norc', file] };
const SH: Interpreter = { command: 'sh', fileExtension: '.sh', args: (file) => [file] };
// -u: unbuffered, so output lines arrive when printed rather than at exit.
const PYTHON: Interpreter = { command: 'python3', fileExtension: '.py', args: (file) => ['-u', file] };
const POWERSHELL: Interpreter = {
  command: 'pwsh',
  fileExtension: '.ps1',
  args: (file) => ['-NoLogo', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', file],
};

const BY_LANGUAGE: Readonly<Record<string, Interpreter>> = {
  bash: BASH,
  sh: SH,
  python: PYTHON,
  python3: PYTHON,
  powershell: POWERSHELL,
  pwsh: POWERSHELL,
};

/** The interpreter for a script language (case-insensitive), or undefined when unsupported. */
export function interpreterFor(language: string): Interpreter | undefined {
  return BY_LANGUAGE[language.trim().toLowerCase()];
}

/** Absolute path of `command` on `searchPath` (a PATH value), or undefined when not installed. */
export function findExecutable(command: string, searchPath: string | undefined): string | undefined {
  for (const dir of (searchPath ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, command);
    // Not there is the common answer (every PATH entry before the right one): asked without an
    // exception, which costs a stack trace each — several per task.
    if (!statSync(candidate, { throwIfNoEntry: false })?.isFile()) continue;
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // there but not executable by us; keep looking
    }
  }
  return undefined;
}
