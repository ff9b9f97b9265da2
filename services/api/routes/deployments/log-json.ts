/**
 * Log items (spec §2.3) written straight to JSON text: what pipelines poll and SSE followers
 * receive, line after line — a million-line log is a million items. Built by hand, in the order
 * and shape of LogSchema (test/services/api/log-json.test.ts holds the two to each other),
 * rather than through an object per item and the generic serializer: that cost more than storing
 * the line. Strings go through JSON.stringify (escaping), ticks are exact integers.
 */
import type { LogEntry } from '../../../store/index.ts';

const json = JSON.stringify;
const LEVEL_COUNTS: Record<string, string> = {
  Error: '"ErrorCount":1,"WarningCount":0',
  Critical: '"ErrorCount":1,"WarningCount":0',
  Warning: '"ErrorCount":0,"WarningCount":1',
};
const NO_COUNTS = '"ErrorCount":0,"WarningCount":0';

/** Text is turned into bytes in pieces of about this many characters (see logItemsJson). */
const PIECE_CHARS = 32 * 1024;

/**
 * `[item, …]` for these entries, as UTF-8 in pieces. A page is about a megabyte: as one string it
 * would be allocated where only a full garbage collection frees it, and a follower reading page
 * after page would grow the heap by hundreds of megabytes between collections; pieces of a few
 * kilobytes die young, and the bytes live outside the heap.
 */
export function logItemsJson(entries: readonly LogEntry[]): Buffer[] {
  if (entries.length === 0) return [Buffer.from('[]')];
  const pieces: Buffer[] = [];
  let piece = '[';
  // Neighbouring lines mostly share their deployment, parent and step: quote each once.
  let deploymentId = '';
  let deploymentJson = '';
  let parent: string | null = null;
  let parentJson = 'null';
  let step: string | null = null;
  let stepJson = 'null';
  let millis = NaN;
  let createdJson = '';
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (entry.deploymentId !== deploymentId) {
      deploymentId = entry.deploymentId;
      deploymentJson = json(deploymentId);
    }
    if (entry.parentLogId !== parent) {
      parent = entry.parentLogId;
      parentJson = parent === null ? 'null' : json(parent);
    }
    if (entry.stepId !== step) {
      step = entry.stepId;
      stepJson = step === null ? 'null' : json(step);
    }
    const ms = entry.createdUtc.getTime();
    if (ms !== millis) {
      millis = ms;
      createdJson = `"${entry.createdUtc.toISOString()}"`;
    }
    piece +=
      (i === 0 ? '' : ',') +
      `{"CreatedLocalTime":null,"CreatedUtc":${createdJson},"CreatedUtcTick":${entry.tick},"Data":${json(entry.data)},` +
      `"DeploymentId":${deploymentJson},"DeploymentMonitorId":null,${LEVEL_COUNTS[entry.level] ?? NO_COUNTS},` +
      `"ExceptionData":${entry.exceptionData === null ? 'null' : json(entry.exceptionData)},"Id":${json(entry.id)},` +
      `"LogLevel":"${entry.level}","ParentLogId":${parentJson},"StepId":${stepJson}}`;
    if (piece.length >= PIECE_CHARS) {
      pieces.push(Buffer.from(piece));
      piece = '';
    }
  }
  pieces.push(Buffer.from(`${piece}]`));
  return pieces;
}
