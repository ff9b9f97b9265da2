// An agent's LogBatch → the engine's AgentLogChunk, checked: what a machine sends is less trusted
// than the control plane, so the limits the agent keeps are enforced here too — lines per batch,
// bytes per batch, characters per line — in memory proportional to the batch's bytes (no object
// per line). Batches of agents that send one LogLine message per line (before chunks) are turned
// into the same chunk.
import * as grpc from '@grpc/grpc-js';
import type { AgentLogChunk } from '../engine/index.ts';
import { ChunkStream, decodeVarints } from '../../proto/index.ts';
import { grpcStatus } from './grpc-errors.ts';
import type { LogBatch, LogLine } from './proto.ts';

export const MAX_LINES_PER_BATCH = 100_000;
/**
 * LogLine messages per batch (agents before chunks): each costs ~130 bytes decoded, so far fewer
 * are taken than chunk lines; message-guard.ts counts them before the batch is decoded.
 */
export const MAX_LEGACY_LINES_PER_BATCH = 10_000;
export const MAX_BATCH_BYTES = 1024 * 1024;
/** The agent cuts longer lines (its LineSplitter); one that arrives longer is cut here, saying so. */
export const MAX_LINE_CHARS = 32 * 1024;
const NEWLINE = 0x0a;

function refused(details: string): never {
  throw grpcStatus(grpc.status.INVALID_ARGUMENT, `LogBatch refused: ${details}`);
}

/** The batch as a chunk, or null when it holds no line. Throws INVALID_ARGUMENT for a malformed one. */
export function toAgentLogChunk(batch: LogBatch): AgentLogChunk | null {
  if (batch.chunk && batch.chunk.count > 0) return fromChunk(batch.chunk);
  return batch.lines.length > 0 ? fromLines(batch.lines) : null;
}

function fromChunk(chunk: NonNullable<LogBatch['chunk']>): AgentLogChunk {
  const firstSeq = Number(chunk.firstSeq);
  const lineCount = chunk.count;
  if (!Number.isSafeInteger(firstSeq) || firstSeq < 1) refused(`first_seq ${chunk.firstSeq} is not a line number`);
  if (lineCount > MAX_LINES_PER_BATCH) refused(`${lineCount} lines (at most ${MAX_LINES_PER_BATCH})`);
  if (chunk.text.length > MAX_BATCH_BYTES) refused(`${chunk.text.length} bytes of text (at most ${MAX_BATCH_BYTES})`);
  const text = checkedText(chunk.text, lineCount);
  if (chunk.streams.length !== 0 && chunk.streams.length !== lineCount)
    refused(`${chunk.streams.length} stream bytes for ${lineCount} lines`);
  let timeDeltasNs: number[] | null = null;
  if (chunk.timeDeltas.length > 0) {
    try {
      timeDeltasNs = decodeVarints(chunk.timeDeltas);
    } catch {
      refused('time_deltas is not a list of varints');
    }
    if (timeDeltasNs.length !== lineCount - 1) refused(`${timeDeltasNs.length} time deltas for ${lineCount} lines`);
  }
  return {
    firstSeq,
    lineCount,
    firstUnixNanos: chunk.firstUnixNanos,
    text,
    streams: chunk.streams.length > 0 ? chunk.streams : null,
    timeDeltasNs,
  };
}

/**
 * The text of `lineCount` lines each ended by '\n'; a line of more than MAX_LINE_CHARS characters
 * is cut there, ending "… [cut: N more characters]". Only such a line is decoded on its own.
 */
function checkedText(bytes: Buffer, lineCount: number): string {
  let start = 0;
  let lines = 0;
  let long: Array<[number, number]> | null = null;
  for (let end = bytes.indexOf(NEWLINE); end !== -1; end = bytes.indexOf(NEWLINE, start)) {
    // A line longer in bytes than the cap may still be within it in characters (multi-byte UTF-8).
    if (end - start > MAX_LINE_CHARS) (long ??= []).push([start, end]);
    lines++;
    start = end + 1;
  }
  if (start !== bytes.length) refused('text does not end with a newline');
  if (lines !== lineCount) refused(`text holds ${lines} lines, count says ${lineCount}`);
  if (!long) return bytes.toString('utf8');
  let text = '';
  let copied = 0;
  for (const [from, to] of long) {
    const line = bytes.toString('utf8', from, to);
    if (line.length <= MAX_LINE_CHARS) continue;
    text += bytes.toString('utf8', copied, from) + cut(line);
    copied = to;
  }
  return text + bytes.toString('utf8', copied);
}

function cut(line: string): string {
  return `${line.slice(0, MAX_LINE_CHARS)}… [cut: ${line.length - MAX_LINE_CHARS} more characters]`;
}

const STREAM_OF: Record<string, number> = {
  STDOUT: ChunkStream.Stdout,
  STDERR: ChunkStream.Stderr,
  SYSTEM: ChunkStream.System,
};

/** Lines of an agent before chunks: the contiguous run from the first (the agent re-sends the rest). */
function fromLines(lines: LogLine[]): AgentLogChunk {
  if (lines.length > MAX_LEGACY_LINES_PER_BATCH)
    refused(`${lines.length} LogLine messages (at most ${MAX_LEGACY_LINES_PER_BATCH}; send a LogChunk)`);
  const firstSeq = Number(lines[0]!.seq);
  if (!Number.isSafeInteger(firstSeq) || firstSeq < 1) refused(`seq ${lines[0]!.seq} is not a line number`);
  let count = 0;
  while (count < lines.length && Number(lines[count]!.seq) === firstSeq + count) count++;
  const run = lines.slice(0, count);
  let bytes = 0;
  const texts = run.map((line) => {
    const text = line.text.replaceAll('\n', ' ');
    bytes += text.length;
    return text.length > MAX_LINE_CHARS ? cut(text) : text;
  });
  if (bytes > MAX_BATCH_BYTES) refused(`${bytes} characters of text (at most ${MAX_BATCH_BYTES})`);
  const nanos = run.map((line) => {
    try {
      return BigInt(line.unixNanos);
    } catch {
      return 0n;
    }
  });
  return {
    firstSeq,
    lineCount: count,
    firstUnixNanos: nanos[0]!.toString(),
    text: texts.map((t) => `${t}\n`).join(''),
    // An unspecified stream (an agent bug or a newer agent's value) is kept as plain output
    // rather than dropped: losing a line is worse than mislabelling it.
    streams: Uint8Array.from(run.map((line) => STREAM_OF[line.stream] ?? ChunkStream.Stdout)),
    timeDeltasNs: nanos.slice(1).map((n, i) => {
      const delta = n - nanos[i]!;
      return delta > 0n && delta < BigInt(Number.MAX_SAFE_INTEGER) ? Number(delta) : 0;
    }),
  };
}

/** Chunks of one task waiting to be stored are stored in one write up to this much text. */
export const MAX_RUN_BYTES = 4 * 1024 * 1024;

/**
 * The chunks cut into runs of contiguous ones (each starting right after the previous one's last
 * line): each run is stored in one write, so a slow store costs one statement per backlog rather
 * than one per agent batch. The chunks stay as they came (rows of moderate size read cheaply).
 */
export function contiguousRuns(chunks: readonly AgentLogChunk[]): AgentLogChunk[][] {
  const runs: AgentLogChunk[][] = [];
  for (const chunk of chunks) {
    const run = runs.at(-1);
    const last = run?.at(-1);
    if (run && last && chunk.firstSeq === last.firstSeq + last.lineCount) run.push(chunk);
    else runs.push([chunk]);
  }
  return runs;
}
