// A Connect message is counted before it is decoded. protobufjs turns every repeated entry into
// an object of ~130 bytes, so a 2 MiB AgentMessage of empty LogLine entries (2 bytes each) would
// become a million objects (~130 MiB) before any check could refuse it. This scan walks the wire
// format once, without allocating, and refuses a message whose repeated fields hold more entries
// than an agent ever sends; everything else is decoded as usual.
import { MAX_LEGACY_LINES_PER_BATCH } from './log-batches.ts';

/** A Connect message refused before decoding: the session ends the call with INVALID_ARGUMENT. */
export interface RefusedMessage {
  readonly refused: string;
}

export function isRefusedMessage(message: unknown): message is RefusedMessage {
  return typeof message === 'object' && message !== null && 'refused' in message;
}

/** Hello's running_task_ids and unacknowledged_results: an agent runs a handful of tasks at once. */
export const MAX_HELLO_TASKS = 1_000;

// Field numbers of agent.proto.
const AGENT_MESSAGE_HELLO = 1;
const AGENT_MESSAGE_LOG_BATCH = 4;
const HELLO_RUNNING_TASK_IDS = 4;
const HELLO_UNACKNOWLEDGED_RESULTS = 5;
const LOG_BATCH_LINES = 2;
const LENGTH_DELIMITED = 2;

/** Calls `onField(field, start, end)` for each length-delimited field; false if the bytes are not protobuf. */
function eachField(
  bytes: Uint8Array,
  from: number,
  to: number,
  onField: (field: number, start: number, end: number) => void,
): boolean {
  let at = from;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; shift < 50; shift += 7) {
      if (at >= to) return -1;
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return value;
    }
    return -1;
  };
  while (at < to) {
    const tag = varint();
    if (tag < 0) return false;
    switch (tag % 8) {
      case 0:
        if (varint() < 0) return false;
        break;
      case 1:
        at += 8;
        break;
      case LENGTH_DELIMITED: {
        const length = varint();
        if (length < 0 || at + length > to) return false;
        onField(Math.floor(tag / 8), at, at + length);
        at += length;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        return false;
    }
  }
  return at === to;
}

/** Why this encoded AgentMessage is refused, or null to decode it. Malformed bytes are left to the decoder. */
export function refusalOf(bytes: Uint8Array): string | null {
  let lines = 0;
  let running = 0;
  let results = 0;
  eachField(bytes, 0, bytes.length, (field, start, end) => {
    if (field === AGENT_MESSAGE_LOG_BATCH)
      eachField(bytes, start, end, (inner) => {
        if (inner === LOG_BATCH_LINES) lines++;
      });
    else if (field === AGENT_MESSAGE_HELLO)
      eachField(bytes, start, end, (inner) => {
        if (inner === HELLO_RUNNING_TASK_IDS) running++;
        else if (inner === HELLO_UNACKNOWLEDGED_RESULTS) results++;
      });
  });
  if (lines > MAX_LEGACY_LINES_PER_BATCH)
    return `LogBatch refused: ${lines} LogLine messages (at most ${MAX_LEGACY_LINES_PER_BATCH}; send a LogChunk)`;
  if (running > MAX_HELLO_TASKS) return `Hello refused: ${running} running task IDs (at most ${MAX_HELLO_TASKS})`;
  if (results > MAX_HELLO_TASKS) return `Hello refused: ${results} unacknowledged results (at most ${MAX_HELLO_TASKS})`;
  return null;
}

/** Wraps a Connect request decoder so that a refused message is never decoded. */
export function guardedDecoder<T>(decode: (bytes: Buffer) => T): (bytes: Buffer) => T | RefusedMessage {
  return (bytes) => {
    const refused = refusalOf(bytes);
    return refused === null ? decode(bytes) : { refused };
  };
}
