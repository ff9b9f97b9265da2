// Proto ↔ engine mapping. The proto carries int64 as decimal strings and enums as names
// (LOADER_OPTIONS); the engine's AgentPort speaks plain numbers and narrow string unions.
import type { AgentTaskResult, RunTaskPayload } from '../engine/index.ts';
import type { RunTask, TaskResult } from './proto.ts';

export function toRunTask(task: RunTaskPayload): RunTask {
  return {
    taskId: task.taskId,
    deploymentId: task.deploymentId,
    stepName: task.stepName,
    script: task.script,
    scriptLanguage: task.scriptLanguage,
    env: task.env,
    sensitiveValues: task.sensitiveValues,
    packages: task.packages.map((p) => ({
      packageId: p.packageId,
      version: p.version,
      sha256: p.sha256,
      sizeBytes: p.sizeBytes,
      format: p.format,
    })),
    redownloadPackages: task.redownloadPackages,
    timeoutSeconds: task.timeoutSeconds,
    packageFolderToken: task.packageFolderToken,
  };
}

export function toAgentTaskResult(result: TaskResult): AgentTaskResult {
  const outcome = result.outcome;
  const known = outcome === 'SUCCEEDED' || outcome === 'FAILED' || outcome === 'CANCELLED' ? outcome : null;
  return {
    // Never count an outcome we cannot read as a success.
    outcome: known ?? 'FAILED',
    exitCode: result.exitCode,
    message: known ? result.message : result.message || `agent reported an unknown outcome '${String(outcome)}'`,
    lastLogSeq: Number(result.lastLogSeq),
  };
}
