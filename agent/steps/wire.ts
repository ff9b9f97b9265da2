// Maps the journal's stored result to its proto message (chunks: log-chunks.ts).
import type { TaskResult } from '../connection/index.ts';
import type { StoredResult } from './task-journal.ts';

export function toWireResult(taskId: string, result: StoredResult): TaskResult {
  return {
    taskId,
    outcome: result.outcome,
    exitCode: result.exitCode,
    message: result.message,
    lastLogSeq: String(result.lastLogSeq),
  };
}
