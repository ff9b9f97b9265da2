/** Runs the built CLI as a process, the way a pipeline does, and collects what it printed. */
import { spawn } from 'node:child_process';
import { cliBundle } from '../helpers/cli-bundle.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
  /** stdout parsed as one JSON document (throws when it is not exactly that). */
  json(): any;
}

/** The CLI started as a process: its output so far, and its end. */
export interface StartedCli {
  stdout: () => string;
  stderr: () => string;
  ended: Promise<CliRun>;
}

export function startCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): StartedCli {
  const started = Date.now();
  const child = spawn(process.execPath, [cliBundle(), ...args], {
    // Nothing from the test runner's environment: only what the test gives, as in a clean CI job.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const ended = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started, json: () => JSON.parse(stdout) });
    });
  });
  return { stdout: () => stdout, stderr: () => stderr, ended };
}

export function runCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<CliRun> {
  return startCli(args, env, timeoutMs).ended;
}

/** A failure message that shows what the CLI printed. */
export const printed = (run: CliRun) => `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
