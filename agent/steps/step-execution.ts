// Runs one RunTask from start to finish: packages into the work folder, then the script, with
// cancel, timeout and agent shutdown all ending in a TaskOutcome (never an exception).
import path from 'node:path';
import { extractArchive, isArchiveFormat } from '../archive/index.ts';
import type { RunTask } from '../connection/index.ts';
import type { PackageCache } from './package-cache.ts';
import { startScript, type RunningScript } from './run-script.ts';
import { emptyFolder, type SpareEntries } from './spare-entries.ts';

export type LogStream = 'STDOUT' | 'STDERR' | 'SYSTEM';
export type Outcome = 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface TaskOutcome {
  readonly outcome: Outcome;
  readonly exitCode: number;
  readonly message: string;
}

export interface StepExecutionDeps {
  /** GANTRY_AGENT_HOME/work */
  readonly workRoot: string;
  /** GANTRY_AGENT_HOME/scripts: substituted scripts while they run (see ScriptSpec.scriptFile). */
  readonly scriptsRoot: string;
  /** Made ahead (spare-entries.ts): empty folders under workRoot, empty files under scriptsRoot. */
  readonly spares: { readonly folders: SpareEntries; readonly files: SpareEntries };
  readonly packages: PackageCache;
  /** Inherited environment (the agent's own GANTRY_* settings already removed). */
  readonly baseEnv: Readonly<Record<string, string>>;
  /** Most bytes one package may unpack to; undefined: the archive module's default. */
  readonly maxUnpackedBytes?: number | undefined;
  readonly write: (stream: LogStream, text: string) => void;
  /** Called once the script's process group exists, so it can be found after a crash. */
  readonly onScriptStarted: (pid: number, startTicks: string | undefined) => void;
}

export type StopReason = 'cancelled' | 'timeout' | 'shutdown';

const STOP_MESSAGES: Readonly<Record<StopReason, (task: RunTask) => string>> = {
  cancelled: () => 'The step was cancelled',
  timeout: (task) => `The step timed out after ${task.timeoutSeconds} s`,
  shutdown: () => 'The agent stopped during the step',
};

/** A task's work folder: its packages are unpacked into it, and its script runs there. */
function workDirOf(workRoot: string, task: RunTask): string {
  return path.join(workRoot, task.deploymentId, task.taskId);
}

/**
 * `text` (the script, an env value, a Sensitive value) with the first package's folder where the
 * control plane wrote `#{CONTEXT.PackageFolder}` (RunTask.package_folder_token). The folder is
 * known before the package is unpacked, so the task's masker can be given the values as run.
 */
export function withPackageFolder(text: string, task: RunTask, workRoot: string): string {
  const token = task.packageFolderToken;
  const first = task.packages[0];
  if (token === '' || !first || !text.includes(token)) return text;
  return text.replaceAll(token, path.join(workDirOf(workRoot, task), first.packageId));
}

export class StepExecution {
  readonly #task: RunTask;
  readonly #deps: StepExecutionDeps;
  readonly #abort = new AbortController();
  #stopReason: StopReason | undefined;
  #graceMs = 10_000;
  #script: RunningScript | undefined;
  #outputPaused = false;

  constructor(task: RunTask, deps: StepExecutionDeps) {
    this.#task = task;
    this.#deps = deps;
  }

  /** Stops the step (TERM to the script's group, KILL after graceMs). The first reason wins. */
  stop(reason: StopReason, graceMs: number): void {
    if (this.#stopReason) return;
    this.#stopReason = reason;
    this.#graceMs = graceMs;
    this.#deps.write('SYSTEM', `${STOP_MESSAGES[reason](this.#task)}; stopping the script`);
    this.#abort.abort();
    this.#script?.stop(graceMs);
  }

  /** Holds the script's output back (or lets it go on): see RunningScript.setOutputPaused. */
  setOutputPaused(paused: boolean): void {
    if (paused === this.#outputPaused) return;
    this.#outputPaused = paused;
    this.#script?.setOutputPaused(paused);
  }

  async run(): Promise<TaskOutcome> {
    const task = this.#task;
    try {
      const workDir = workDirOf(this.#deps.workRoot, task);
      // A task runs once, so its folder is new; one left by a crash mid-preparation is emptied.
      // Synchronous: a rename or two cost less than hand-offs to libuv's thread pool.
      emptyFolder(this.#deps.spares.folders, workDir);
      const env: Record<string, string> = { ...this.#deps.baseEnv };
      for (const [name, value] of Object.entries(task.env))
        env[name] = withPackageFolder(value, task, this.#deps.workRoot);
      await this.#preparePackages(workDir, env);
      if (this.#stopReason) return this.#stoppedOutcome(-1);

      const script = await startScript({
        scriptFile: path.join(this.#deps.scriptsRoot, task.taskId),
        spareFiles: this.#deps.spares.files,
        language: task.scriptLanguage,
        script: withPackageFolder(task.script, task, this.#deps.workRoot),
        workDir,
        env,
        onLine: this.#deps.write,
      });
      this.#script = script;
      if (this.#outputPaused) script.setOutputPaused(true);
      this.#deps.onScriptStarted(script.pid, script.startTicks);
      if (this.#stopReason) script.stop(this.#graceMs);
      const timer =
        task.timeoutSeconds > 0
          ? setTimeout(() => this.stop('timeout', 10_000), task.timeoutSeconds * 1000)
          : undefined;
      const exit = await script.exited.finally(() => clearTimeout(timer));

      const exitCode = exit.exitCode ?? -1;
      if (this.#stopReason) return this.#stoppedOutcome(exitCode);
      if (exitCode === 0) return { outcome: 'SUCCEEDED', exitCode, message: '' };
      const message = exit.signal
        ? `The script was killed by ${exit.signal}`
        : `The script exited with code ${exitCode}`;
      this.#deps.write('SYSTEM', message);
      return { outcome: 'FAILED', exitCode, message };
    } catch (error) {
      if (this.#stopReason) return this.#stoppedOutcome(-1);
      const message = error instanceof Error ? error.message : String(error);
      this.#deps.write('SYSTEM', message);
      return { outcome: 'FAILED', exitCode: -1, message };
    }
  }

  async #preparePackages(workDir: string, env: Record<string, string>): Promise<void> {
    for (const ref of this.#task.packages) {
      this.#deps.write('SYSTEM', `Fetching package ${ref.packageId} ${ref.version}`);
      const file = await this.#deps.packages.get(ref, {
        redownload: this.#task.redownloadPackages,
        signal: this.#abort.signal,
      });
      const folder = path.join(workDir, ref.packageId);
      const format = await extractArchive(file, folder, {
        format: isArchiveFormat(ref.format) ? ref.format : undefined,
      });
      this.#deps.write('SYSTEM', `Extracted package ${ref.packageId} ${ref.version} (${format}) to ${folder}`);
      env.PackageFolder ??= folder;
      env[`PackageFolder_${ref.packageId.replace(/[^A-Za-z0-9_]/g, '_')}`] = folder;
    }
  }

  #stoppedOutcome(exitCode: number): TaskOutcome {
    const reason = this.#stopReason ?? 'cancelled';
    return {
      outcome: reason === 'cancelled' ? 'CANCELLED' : 'FAILED',
      exitCode,
      message: STOP_MESSAGES[reason](this.#task),
    };
  }
}
