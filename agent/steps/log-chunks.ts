// A task's output as the agent keeps and sends it: chunks of consecutive lines (the LogChunk of
// agent.proto) rather than one object per line, so a step printing millions of lines costs little
// per line — in memory, in the journal and on the wire.
import { decodeVarints, encodeVarints } from '../../proto/index.ts';
import type { LogLine } from '../connection/index.ts';
import type { LogStream } from './step-execution.ts';

/**
 * Lines seq firstSeq .. firstSeq + count - 1: `text` holds each followed by '\n' (masked);
 * `streams` one digit per line ('1' STDOUT, '2' STDERR, '3' SYSTEM; null: all STDOUT);
 * `timeDeltas` base64 of the varint nanoseconds from each line to the next (null: all at once).
 * Strings, so a chunk is one JSON record in the journal as it is.
 */
export interface StoredChunk {
  readonly firstSeq: number;
  readonly count: number;
  readonly firstUnixNanos: string;
  readonly text: string;
  readonly streams: string | null;
  readonly timeDeltas: string | null;
}

const DIGIT_OF: Record<LogStream, string> = { STDOUT: '1', STDERR: '2', SYSTEM: '3' };
const STREAM_OF_DIGIT: Record<string, LogStream> = { '1': 'STDOUT', '2': 'STDERR', '3': 'SYSTEM' };

/** Collects the lines of one task until they are flushed as a chunk. */
export class ChunkBuilder {
  readonly firstSeq: number;
  readonly #lines: string[] = [];
  #streams = '';
  #allStdout = true;
  readonly #deltas: number[] = [];
  #firstNanos = 0n;
  #lastNanos = 0n;
  #bytes = 0;

  constructor(firstSeq: number) {
    this.firstSeq = firstSeq;
  }

  get count(): number {
    return this.#lines.length;
  }

  /** Characters of text collected so far. */
  get bytes(): number {
    return this.#bytes;
  }

  add(stream: LogStream, text: string, unixNanos: bigint): void {
    if (this.#lines.length === 0) this.#firstNanos = unixNanos;
    else this.#deltas.push(unixNanos > this.#lastNanos ? Number(unixNanos - this.#lastNanos) : 0);
    this.#lastNanos = unixNanos > this.#lastNanos ? unixNanos : this.#lastNanos;
    this.#lines.push(text);
    this.#streams += DIGIT_OF[stream];
    if (stream !== 'STDOUT') this.#allStdout = false;
    this.#bytes += text.length + 1;
  }

  /** The chunk; `mask` runs once over the whole text (it never matches across lines). */
  build(mask: (text: string) => string): StoredChunk {
    return {
      firstSeq: this.firstSeq,
      count: this.#lines.length,
      firstUnixNanos: this.#firstNanos.toString(),
      text: mask(`${this.#lines.join('\n')}\n`),
      streams: this.#allStdout ? null : this.#streams,
      timeDeltas: this.#deltas.some((d) => d !== 0) ? encodeVarints(this.#deltas).toString('base64') : null,
    };
  }
}

export function lastSeqOf(chunk: StoredChunk): number {
  return chunk.firstSeq + chunk.count - 1;
}

/** The chunk from line `fromSeq` on (null when none is left). Rare: only after a reconnect. */
export function sliceChunk(chunk: StoredChunk, fromSeq: number): StoredChunk | null {
  const skip = fromSeq - chunk.firstSeq;
  if (skip <= 0) return chunk;
  if (skip >= chunk.count) return null;
  const lines = chunk.text.split('\n').slice(skip, chunk.count);
  const deltas = chunk.timeDeltas ? decodeDeltas(chunk.timeDeltas) : null;
  const skipped = deltas ? deltas.slice(0, skip).reduce((sum, d) => sum + d, 0) : 0;
  return {
    firstSeq: fromSeq,
    count: chunk.count - skip,
    firstUnixNanos: (BigInt(chunk.firstUnixNanos) + BigInt(skipped)).toString(),
    text: `${lines.join('\n')}\n`,
    streams: chunk.streams ? chunk.streams.slice(skip) : null,
    timeDeltas: deltas ? encodeVarints(deltas.slice(skip)).toString('base64') : null,
  };
}

function decodeDeltas(base64: string): number[] {
  return decodeVarints(Buffer.from(base64, 'base64'));
}

/** The wire's LogChunk (bytes fields as Buffers). */
export function toWireChunk(chunk: StoredChunk) {
  return {
    firstSeq: String(chunk.firstSeq),
    count: chunk.count,
    firstUnixNanos: chunk.firstUnixNanos,
    text: Buffer.from(chunk.text, 'utf8'),
    // '1' is 0x31: subtracting 0x30 from each byte gives the LogLine.Stream value.
    streams: chunk.streams ? Buffer.from(chunk.streams, 'latin1').map((b) => b - 0x30) : Buffer.alloc(0),
    timeDeltas: chunk.timeDeltas ? Buffer.from(chunk.timeDeltas, 'base64') : Buffer.alloc(0),
  };
}

/** One LogLine per line, for a control plane that does not read chunks (Welcome says so). */
export function toWireLines(chunk: StoredChunk): LogLine[] {
  const lines = chunk.text.split('\n');
  const deltas = chunk.timeDeltas ? decodeDeltas(chunk.timeDeltas) : [];
  let nanos = BigInt(chunk.firstUnixNanos);
  return Array.from({ length: chunk.count }, (_, i) => {
    if (i > 0) nanos += BigInt(deltas[i - 1] ?? 0) + 1n;
    return {
      seq: String(chunk.firstSeq + i),
      stream: STREAM_OF_DIGIT[chunk.streams?.[i] ?? '1'] ?? 'STDOUT',
      text: lines[i] ?? '',
      unixNanos: nanos.toString(),
    };
  });
}

/** Lines journaled by agents before chunks, as one chunk (they are consecutive by seq). */
export function chunkOfLines(
  lines: ReadonlyArray<{ seq: number; stream: LogStream; text: string; unixNanos: string }>,
): StoredChunk | null {
  const first = lines[0];
  if (!first) return null;
  const builder = new ChunkBuilder(first.seq);
  for (const line of lines) builder.add(line.stream, line.text, BigInt(line.unixNanos));
  return builder.build((text) => text);
}
