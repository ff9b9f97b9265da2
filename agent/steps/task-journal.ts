// The agent's durable memory of tasks: GANTRY_AGENT_HOME/tasks/<taskId>/{state.ndjson, logs.ndjson}.
// It is what makes task_id idempotent across agent restarts and keeps log lines until the control
// plane acknowledges them. Synchronous I/O on purpose: writes are small, and their order with
// respect to sends on the stream must be exact (persist first, then send).
//
// A task's state is appended, one JSON line per change, and read back as its last whole line.
// A write() to a regular file completes even when the process is killed, so a crash cannot tear
// a record; and an append costs a fraction of the write-temp-then-rename it replaced, which on
// ext4 (replace-via-rename flushes the data) cost 1–2 ms per change, several times per task.
import { appendFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
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

export interface StoredLogLine {
  readonly seq: number;
  readonly stream: LogStream;
  readonly text: string;
  readonly unixNanos: string;
}

export class TaskJournal {
  readonly #root: string;
  /** Task folders that exist (read once at start, then kept up to date by this journal). */
  readonly #folders: Set<string>;

  constructor(root: string) {
    this.#root = root;
    mkdirSync(root, { recursive: true });
    // This agent is the journal's only writer: what is on disk now plus what it creates is all
    // there is, so asking about a new task (every RunTask does) needs no file system lookups.
    this.#folders = new Set(readdirSync(root));
  }

  get(taskId: string): TaskRecord | undefined {
    if (!this.#folders.has(taskId)) return undefined;
    let content: string;
    try {
      content = readFileSync(this.#stateFile(taskId), 'utf8');
    } catch {
      // Written by an agent before state.ndjson (one JSON document): still known, never re-run.
      // The next save appends to state.ndjson, which is read from then on.
      try {
        content = readFileSync(path.join(this.#root, taskId, 'state.json'), 'utf8');
      } catch {
        return undefined;
      }
    }
    const lines = content.split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      if (lines[i] === '') continue;
      try {
        return JSON.parse(lines[i]!) as TaskRecord;
      } catch {
        // not a whole record (written by something else than this journal): try the one before
      }
    }
    return undefined;
  }

  /** Every record on disk, tombstones included. */
  all(): TaskRecord[] {
    const records: TaskRecord[] = [];
    for (const taskId of readdirSync(this.#root)) {
      const record = this.get(taskId);
      if (record) records.push(record);
    }
    return records;
  }

  /** Records the task's state (see the top of this file). */
  save(record: TaskRecord): void {
    this.#ensureFolder(record.taskId);
    appendFileSync(this.#stateFile(record.taskId), JSON.stringify(record) + '\n');
  }

  appendLogs(taskId: string, lines: readonly StoredLogLine[]): void {
    if (lines.length === 0) return;
    this.#ensureFolder(taskId);
    appendFileSync(this.#logFile(taskId), lines.map((line) => JSON.stringify(line) + '\n').join(''));
  }

  /** Lines with seq > afterSeq, up to about maxBytes of text (at least one line). */
  readLogs(taskId: string, afterSeq: number, maxBytes: number): StoredLogLine[] {
    const lines: StoredLogLine[] = [];
    let bytes = 0;
    for (const line of this.#allLines(taskId)) {
      if (line.seq <= afterSeq) continue;
      if (lines.length > 0 && bytes + line.text.length > maxBytes) break;
      lines.push(line);
      bytes += line.text.length;
    }
    return lines;
  }

  /** Highest seq stored for the task (0 when none): the truth after a crash. */
  lastSeq(taskId: string): number {
    if (!this.#folders.has(taskId)) return 0;
    let last = 0;
    for (const line of this.#allLines(taskId)) last = Math.max(last, line.seq);
    return last;
  }

  /** Drops the logs and keeps the record as a tombstone. */
  forget(record: TaskRecord): void {
    record.forgotten = true;
    this.save(record);
    rmSync(this.#logFile(record.taskId), { force: true });
  }

  /** Deletes tombstones finished before `olderThanUnixMs`. */
  prune(olderThanUnixMs: number): void {
    for (const record of this.all()) {
      if (record.forgotten && (record.finishedUnixMs ?? 0) < olderThanUnixMs) {
        rmSync(path.join(this.#root, record.taskId), { recursive: true, force: true });
        this.#folders.delete(record.taskId);
      }
    }
  }

  *#allLines(taskId: string): Generator<StoredLogLine> {
    let content: string;
    try {
      content = readFileSync(this.#logFile(taskId), 'utf8');
    } catch {
      return;
    }
    for (const raw of content.split('\n')) {
      if (raw === '') continue;
      try {
        yield JSON.parse(raw) as StoredLogLine;
      } catch {
        // a line torn by a crash mid-append: everything before it is intact
      }
    }
  }

  #ensureFolder(taskId: string): void {
    if (this.#folders.has(taskId)) return;
    mkdirSync(path.join(this.#root, taskId), { recursive: true });
    this.#folders.add(taskId);
  }

  #stateFile(taskId: string): string {
    return path.join(this.#root, taskId, 'state.ndjson');
  }

  #logFile(taskId: string): string {
    return path.join(this.#root, taskId, 'logs.ndjson');
  }
}
