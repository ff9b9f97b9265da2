/** An agent's chunk of a task's lines, as the gateway hands it to the store (NewLogChunk). */
import { dateToTicks, newId } from '../../services/core/index.ts';
import type { NewLogChunk, Store } from '../../services/store/index.ts';

/**
 * Lines of `taskId` from `firstSeq`, printed at `printed` (default now), one tick apart. `levels`:
 * one byte per line, 1 for a Warning (what a script wrote to stderr); null: all Information.
 */
export function agentChunk(
  taskId: string,
  firstSeq: number,
  lines: string[],
  options: { levels?: Buffer | null; printed?: Date; stepId?: string | null } = {},
): NewLogChunk {
  const levels = options.levels ?? null;
  return {
    taskId,
    stepId: options.stepId === undefined ? 'step-x' : options.stepId,
    parentLogId: taskId,
    firstSeq,
    lineCount: lines.length,
    firstTick: dateToTicks(options.printed ?? new Date()),
    tickSteps: null,
    spanTicks: BigInt(lines.length - 1),
    levels,
    warnings: levels ? levels.filter((level) => level === 1).length : 0,
    data: lines.map((line) => `${line}\n`).join(''),
  };
}

/** A task of step 'step-x' (no machine) stored and started, as a dispatch leaves it: its ID. */
export async function runningAgentTask(store: Store, deploymentId: string): Promise<string> {
  const taskId = newId();
  await store.deploymentTasks.insertManyCounted([
    { id: taskId, deploymentId, stageIndex: 0, stepId: 'step-x', stepName: 'X', machineId: null, machineName: null },
  ]);
  await store.deploymentLogs.record(deploymentId, [{ starts: { taskIds: [taskId], lines: [] } }], new Date());
  return taskId;
}
