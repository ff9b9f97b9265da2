// The agent's durable memory of tasks: one append-only file, GANTRY_AGENT_HOME/tasks/journal.ndjson.
// It is what makes task_id idempotent across agent restarts and keeps log lines until the control
// plane acknowledges them. Synchronous I/O on purpose: writes are small, and their order with
// respect to sends on the stream must be exact (persist first, then send).
//
// Each change is one JSON line written by one write() to a descriptor held open: a write to a
// regular file completes even when the process is killed, so a crash cannot tear a record (a torn
// tail from a power loss is cut off at the next start). One file rather than a folder and two
// files per task: creating and deleting inodes is what cost here — ~1.6–2 ms of CPU per task on
// ext4 (inode allocation scans past recently deleted inodes), against ~0.01 ms for the appends.
// The file is rewritten with only what is still needed once most of it is history.
import {
  closeSync,
  existsSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  fchmodSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { chunkOfLines, lastSeqOf, sliceChunk, type StoredChunk } from './log-chunks.ts';
import type { LogStream, Outcome } from './step-execution.ts';

export interface StoredResult {
  readonly outcome: Outcome;
  readonly exitCode: number;
  readonly message: string;
  readonly lastLogSeq: number;
}

export interface TaskRecord {
  readonly taskId: string;
  readonly deploymentId: string;
  /** accepted: journaled, preparing packages; running: the script's process exists (pid below). */
  status: 'accepted' | 'running' | 'finished';
  acceptedUnixMs: number;
  finishedUnixMs?: number;
  /** Leader pid (= pgid) and its start ticks while the script runs. */
  pid?: number;
  pidStartTicks?: string;
  result?: StoredResult;
  resultAcknowledged: boolean;
  logsAcknowledgedSeq: number;
  /** Logs deleted after both acknowledgements; the record stays as a tombstone. */
  forgotten: boolean;
}

/** A line as agents before chunks journaled it (read, never written any more). */
interface StoredLogLine {
  readonly seq: number;
  readonly stream: LogStream;
  readonly text: string;
  readonly unixNanos: string;
}

export interface TaskJournalOptions {
  /** The file is rewritten once it is larger than this and at least half of it is history (default 8 MiB). */
  readonly compactAtBytes?: number;
}

/** One line of the file. */
type Entry =
  | { state: TaskRecord }
  | { chunk: StoredChunk & { taskId: string } }
  | { logs: { taskId: string; lines: StoredLogLine[] } };

/** Where one appended batch of a task's lines lies in the file. */
interface LogSpan {
  readonly offset: number;
  readonly length: number;
  readonly lastSeq: number;
}

interface Known {
  /** The task's latest state, as written (parsed on each read, so callers get their own copy). */
  state: string;
  spans: LogSpan[];
  lastSeq: number;
}

const FILE_NAME = 'journal.ndjson';
const NEWLINE = 0x0a;

export class TaskJournal {
  readonly #root: string;
  readonly #file: string;
  readonly #compactAtBytes: number;
  readonly #tasks = new Map<string, Known>();
  #fd: number;
  #size = 0;
  #nextCheckAt: number;

  constructor(root: string, options: TaskJournalOptions = {}) {
    this.#root = root;
    this.#file = path.join(root, FILE_NAME);
    this.#compactAtBytes = options.compactAtBytes ?? 8 * 1024 * 1024;
    this.#nextCheckAt = this.#compactAtBytes;
    mkdirSync(root, { recursive: true, mode: 0o700 });
    this.#fd = openSync(this.#file, 'a+', 0o600);
    fchmodSync(this.#fd, 0o600); // a journal an earlier agent created 0644
    this.#load();
    this.#importTaskFolders();
  }

  get(taskId: string): TaskRecord | undefined {
    const known = this.#tasks.get(taskId);
    return known && (JSON.parse(known.state) as TaskRecord);
  }

  /** Every record, tombstones included. */
  all(): TaskRecord[] {
    return [...this.#tasks.values()].map((known) => JSON.parse(known.state) as TaskRecord);
  }

  /** Records the task's state. */
  save(record: TaskRecord): void {
    const state = JSON.stringify(record);
    this.#append(`{"state":${state}}\n`);
    this.#remember(record, state);
    this.#compactWhenMostlyHistory();
  }

  /** Appends a chunk of a task's lines (after its state was saved): one record, one write. */
  appendChunk(taskId: string, chunk: StoredChunk): void {
    const known = this.#tasks.get(taskId);
    if (!known || chunk.count === 0) return;
    const text = `{"chunk":${JSON.stringify({ taskId, ...chunk })}}\n`;
    const offset = this.#append(text);
    known.spans.push({ offset, length: Buffer.byteLength(text), lastSeq: lastSeqOf(chunk) });
    known.lastSeq = Math.max(known.lastSeq, lastSeqOf(chunk));
    this.#compactWhenMostlyHistory();
  }

  /**
   * The task's chunks holding lines with seq > afterSeq (the first cut to start after it), up to
   * about maxBytes of text (at least one chunk).
   */
  readChunks(taskId: string, afterSeq: number, maxBytes: number): StoredChunk[] {
    const chunks: StoredChunk[] = [];
    let bytes = 0;
    for (const span of this.#tasks.get(taskId)?.spans ?? []) {
      if (span.lastSeq <= afterSeq) continue;
      const stored = chunkOf(this.#readEntry(span));
      const chunk = stored && sliceChunk(stored, afterSeq + 1);
      if (!chunk) continue;
      if (chunks.length > 0 && bytes + chunk.text.length > maxBytes) return chunks;
      chunks.push(chunk);
      bytes += chunk.text.length;
    }
    return chunks;
  }

  /** Highest seq stored for the task (0 when none): the truth after a crash. */
  lastSeq(taskId: string): number {
    return this.#tasks.get(taskId)?.lastSeq ?? 0;
  }

  /** Drops the logs and keeps the record as a tombstone. */
  forget(record: TaskRecord): void {
    record.forgotten = true;
    this.save(record);
  }

  /** Deletes tombstones finished before `olderThanUnixMs` (the file is rewritten without them); returns them. */
  prune(olderThanUnixMs: number): TaskRecord[] {
    const pruned = this.all().filter((record) => record.forgotten && (record.finishedUnixMs ?? 0) < olderThanUnixMs);
    for (const record of pruned) this.#tasks.delete(record.taskId);
    if (pruned.length > 0) this.#compact();
    return pruned;
  }

  close(): void {
    closeSync(this.#fd);
  }

  #append(text: string): number {
    const offset = this.#size;
    const bytes = Buffer.from(text);
    let written = 0;
    while (written < bytes.length) written += writeSync(this.#fd, bytes, written);
    this.#size += bytes.length;
    return offset;
  }

  #readEntry(span: LogSpan): Entry | undefined {
    return parseEntry(this.#readSpan(span).toString('utf8'));
  }

  #readSpan(span: LogSpan): Buffer {
    const buffer = Buffer.alloc(span.length);
    let read = 0;
    while (read < span.length) {
      const n = readSync(this.#fd, buffer, read, span.length - read, span.offset + read);
      if (n === 0) break;
      read += n;
    }
    return buffer.subarray(0, read);
  }

  /** Reads the whole file once (at start), cutting off a torn last line. */
  #load(): void {
    const size = fstatSync(this.#fd).size;
    let offset = 0;
    let carry = Buffer.alloc(0);
    const chunk = Buffer.alloc(1024 * 1024);
    let position = 0;
    while (position < size) {
      const n = readSync(this.#fd, chunk, 0, chunk.length, position);
      if (n === 0) break;
      position += n;
      let data = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, n)]) : chunk.subarray(0, n);
      let start = 0;
      for (let end = data.indexOf(NEWLINE); end !== -1; end = data.indexOf(NEWLINE, start)) {
        this.#index(parseEntry(data.toString('utf8', start, end)), offset, end + 1 - start);
        offset += end + 1 - start;
        start = end + 1;
      }
      data = data.subarray(start);
      carry = Buffer.from(data);
    }
    // Whatever follows the last newline was torn by a crash mid-write: appending after it would
    // glue the next record onto it.
    if (offset < size) ftruncateSync(this.#fd, offset);
    this.#size = offset;
  }

  #index(entry: Entry | undefined, offset: number, length: number): void {
    if (!entry) return; // not a whole record: skipped, as the journal never wrote it whole
    if ('state' in entry) {
      this.#remember(entry.state, JSON.stringify(entry.state));
      return;
    }
    const taskId = 'chunk' in entry ? entry.chunk.taskId : entry.logs.taskId;
    const chunk = chunkOf(entry);
    const known = this.#tasks.get(taskId);
    if (!known || !chunk) return;
    known.spans.push({ offset, length, lastSeq: lastSeqOf(chunk) });
    known.lastSeq = Math.max(known.lastSeq, lastSeqOf(chunk));
  }

  #remember(record: TaskRecord, state: string): void {
    const known = this.#tasks.get(record.taskId);
    if (!known) this.#tasks.set(record.taskId, { state, spans: [], lastSeq: 0 });
    else {
      known.state = state;
      if (record.forgotten) {
        known.spans = [];
        known.lastSeq = 0;
      }
    }
  }

  #compactWhenMostlyHistory(): void {
    if (this.#size <= this.#nextCheckAt) return;
    let live = 0;
    for (const known of this.#tasks.values()) {
      live += known.state.length + 12;
      for (const span of known.spans) live += span.length;
    }
    if (live * 2 < this.#size) this.#compact();
    // Still mostly live (a task with many unacknowledged lines): look again once it has doubled.
    this.#nextCheckAt = Math.max(this.#compactAtBytes, 2 * live);
  }

  /** Rewrites the file with each task's latest state and the lines not yet forgotten. */
  #compact(): void {
    const next = `${this.#file}.next`;
    const fd = openSync(next, 'w', 0o600);
    let size = 0;
    const write = (bytes: Buffer) => {
      let written = 0;
      while (written < bytes.length) written += writeSync(fd, bytes, written);
      size += bytes.length;
    };
    const moved = new Map<string, LogSpan[]>();
    for (const [taskId, known] of this.#tasks) {
      write(Buffer.from(`{"state":${known.state}}\n`));
      const spans: LogSpan[] = [];
      for (const span of known.spans) {
        spans.push({ offset: size, length: span.length, lastSeq: span.lastSeq });
        write(this.#readSpan(span));
      }
      moved.set(taskId, spans);
    }
    // The new file is complete on disk before it replaces the old one: a crash either way leaves
    // one whole journal.
    fsyncSync(fd);
    closeSync(fd);
    renameSync(next, this.#file);
    closeSync(this.#fd);
    this.#fd = openSync(this.#file, 'a+', 0o600);
    this.#size = size;
    for (const [taskId, spans] of moved) this.#tasks.get(taskId)!.spans = spans;
  }

  /**
   * Agents before this journal kept a folder per task (state.ndjson or state.json, logs.ndjson):
   * their tasks are copied in once, then the folders removed.
   */
  #importTaskFolders(): void {
    const folders = readdirSync(this.#root, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    if (folders.length === 0) return;
    for (const { name } of folders) {
      const folder = path.join(this.#root, name);
      const record = readLegacyRecord(folder);
      // Known already: copied in by a start that died before removing the folder.
      if (record && !this.#tasks.has(record.taskId)) {
        this.save(record);
        const chunk = record.forgotten ? null : chunkOfLines(readLegacyLines(path.join(folder, 'logs.ndjson')));
        if (chunk) this.appendChunk(record.taskId, chunk);
      }
    }
    fsyncSync(this.#fd);
    for (const { name } of folders) rmSync(path.join(this.#root, name), { recursive: true, force: true });
  }
}

/** The lines of a record as a chunk: a chunk record, or the per-line record of an earlier agent. */
function chunkOf(entry: Entry | undefined): StoredChunk | null {
  if (!entry || 'state' in entry) return null;
  if ('chunk' in entry) {
    const { taskId: _taskId, ...chunk } = entry.chunk;
    return chunk;
  }
  return chunkOfLines(entry.logs.lines);
}

function parseEntry(text: string): Entry | undefined {
  try {
    const entry = JSON.parse(text) as Entry | null;
    if (entry && typeof entry === 'object' && ('state' in entry || 'chunk' in entry || 'logs' in entry)) return entry;
  } catch {
    // a torn or foreign line: skipped
  }
  return undefined;
}

function readLegacyRecord(folder: string): TaskRecord | undefined {
  for (const file of ['state.ndjson', 'state.json']) {
    const full = path.join(folder, file);
    if (!existsSync(full)) continue;
    const lines = readFileSync(full, 'utf8').split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      try {
        if (lines[i]) return JSON.parse(lines[i]!) as TaskRecord;
      } catch {
        // a torn last line: the one before it is whole
      }
    }
  }
  return undefined;
}

function readLegacyLines(file: string): StoredLogLine[] {
  if (!existsSync(file)) return [];
  const lines: StoredLogLine[] = [];
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    try {
      if (raw) lines.push(JSON.parse(raw) as StoredLogLine);
    } catch {
      // a line torn by a crash mid-append: everything before it is intact
    }
  }
  return lines;
}
