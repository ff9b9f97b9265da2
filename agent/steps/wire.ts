// Maps the journal's stored shapes to proto messages.
import type { LogLine, TaskResult } from '../connection/index.ts';
import type { StoredLogLine, StoredResult } from './task-journal.ts';

export function toWireLine(line: StoredLogLine): LogLine {
  return { seq: String(line.seq), stream: line.stream, text: line.text, unixNanos: line.unixNanos };
}

export function toWireResult(taskId: string, result: StoredResult): TaskResult {
  return {
    taskId,
    outcome: result.outcome,
    exitCode: result.exitCode,
    message: result.message,
    lastLogSeq: String(result.lastLogSeq),
  };
}
