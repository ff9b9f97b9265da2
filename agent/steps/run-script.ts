// Runs one script in its own process group (detached), streaming stdout/stderr as lines. Stop =
// SIGTERM to the whole group, SIGKILL after the grace period, so `sleep` children die too.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync, writeFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { findExecutable, interpreterFor } from './interpreters.ts';
import { LineSplitter } from './line-splitter.ts';
import { processStartTicks, signalProcessGroup } from './process-group.ts';
import type { SpareEntries } from './spare-entries.ts';

export type OutputStream = 'STDOUT' | 'STDERR';

export interface ScriptSpec {
  readonly language: string;
  readonly script: string;
  readonly workDir: string;
  /**
   * Where the script file is written, mode 0600, and removed as soon as the process ends: the
   * script holds the step's substituted variables, Sensitive ones included, which must not stay
   * at rest on the machine. A folder of the agent's own (0700), emptied at every agent start.
   */
  readonly scriptFile: string;
  /** Empty 0600 files on scriptFile's file system, one renamed to scriptFile rather than creating it. */
  readonly spareFiles?: SpareEntries;
  /** The complete environment of the script (PATH decides which interpreter is found). */
  readonly env: Readonly<Record<string, string>>;
  readonly onLine: (stream: OutputStream, text: string) => void;
}

export interface ScriptExit {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunningScript {
  readonly pid: number;
  /** Linux start ticks of the leader, to recognise the group after an agent restart. */
  readonly startTicks: string | undefined;
  readonly exited: Promise<ScriptExit>;
  /** SIGTERM to the group now, SIGKILL after graceMs. Safe to call more than once. */
  stop(graceMs: number): void;
  /**
   * Stops (and goes on) reading the script's output: a script writing faster than its lines can
   * be stored then waits on its pipe, as on a slow terminal, instead of filling the agent's disk.
   */
  setOutputPaused(paused: boolean): void;
}

/** The script could not start; `message` is meant for the step's log. */
export class ScriptStartError extends Error {
  readonly code = 'SCRIPT_NOT_STARTED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ScriptStartError';
  }
}

/** How long to wait for buffered output after the leader exits (a daemonised child may hold the pipes). */
const OUTPUT_DRAIN_MS = 2000;

export async function startScript(spec: ScriptSpec): Promise<RunningScript> {
  const interpreter = interpreterFor(spec.language);
  if (!interpreter)
    throw new ScriptStartError(`Unsupported script language "${spec.language}" (use bash, sh, python or powershell)`);
  const executable = findExecutable(interpreter.command, spec.env.PATH);
  if (!executable) {
    throw new ScriptStartError(
      `${interpreter.command} is not installed on this machine (needed for ${spec.language} scripts)`,
    );
  }
  const scriptFile = spec.scriptFile + interpreter.fileExtension;
  spec.spareFiles?.take(scriptFile);
  // Synchronous: open, write and close would each be a hand-off to libuv's thread pool.
  writeFileSync(scriptFile, spec.script, { mode: 0o600 });
  const removeScript = () => rmSync(scriptFile, { force: true });

  const child = spawn(executable, interpreter.args(scriptFile), {
    cwd: spec.workDir,
    env: spec.env,
    detached: true, // own process group: the whole tree can be signalled with kill(-pid)
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await Promise.race([
      once(child, 'spawn'),
      once(child, 'error').then(([error]) => Promise.reject(error instanceof Error ? error : new Error(String(error)))),
    ]);
  } catch (error) {
    removeScript();
    throw new ScriptStartError(`${interpreter.command} could not be started: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const pid = child.pid;
  if (pid === undefined) {
    removeScript();
    throw new ScriptStartError(`${interpreter.command} could not be started`);
  }

  const drained = Promise.all([
    pumpLines(child.stdout, (text) => spec.onLine('STDOUT', text)),
    pumpLines(child.stderr, (text) => spec.onLine('STDERR', text)),
  ]);
  let killTimer: NodeJS.Timeout | undefined;
  const exited = once(child, 'exit').then(async ([exitCode, signal]) => {
    // The interpreter is gone (it read the file while it ran); whatever happens next, the
    // substituted script does not stay on disk.
    removeScript();
    // What it wrote last is in the pipe (at most its buffer, as the script waited on it): read it
    // whatever the flow control says, or those lines would be lost.
    child.stdout.resume();
    child.stderr.resume();
    await Promise.race([drained, delay(OUTPUT_DRAIN_MS)]);
    child.stdout.destroy();
    child.stderr.destroy();
    // Nothing left in the group: the pending SIGKILL is not needed (and the pgid may be reused).
    if (killTimer && !signalProcessGroup(pid, 0)) clearTimeout(killTimer);
    return { exitCode: exitCode as number | null, signal: signal as NodeJS.Signals | null };
  });

  return {
    pid,
    startTicks: processStartTicks(pid),
    exited,
    stop(graceMs: number) {
      if (killTimer) return;
      signalProcessGroup(pid, 'SIGTERM');
      killTimer = setTimeout(() => signalProcessGroup(pid, 'SIGKILL'), graceMs);
    },
    setOutputPaused(paused: boolean) {
      for (const stream of [child.stdout, child.stderr]) {
        if (paused) stream.pause();
        else stream.resume();
      }
    },
  };
}

async function pumpLines(stream: Readable, onLine: (text: string) => void): Promise<void> {
  const splitter = new LineSplitter(onLine);
  stream.on('data', (chunk: Buffer) => splitter.push(chunk));
  await new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  splitter.end();
}
