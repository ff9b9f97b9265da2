import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chunkOfLines, type StoredChunk } from '../../../agent/steps/log-chunks.ts';
import { TaskJournal, type TaskRecord } from '../../../agent/steps/task-journal.ts';

const record = (taskId: string, patch: Partial<TaskRecord> = {}): TaskRecord => ({
  taskId,
  deploymentId: 'd-1',
  status: 'accepted',
  acceptedUnixMs: 1,
  resultAcknowledged: false,
  logsAcknowledgedSeq: 0,
  forgotten: false,
  ...patch,
});

const line = (seq: number, text = `line ${seq}`) => ({ seq, stream: 'STDOUT' as const, text, unixNanos: String(seq) });
/** Consecutive lines as the chunk an agent journals. */
const chunk = (...lines: Array<ReturnType<typeof line>>): StoredChunk => chunkOfLines(lines)!;
/** The lines of the chunks read back: seq and text of each. */
const linesOf = (chunks: StoredChunk[]) =>
  chunks.flatMap((c) =>
    c.text
      .split('\n')
      .slice(0, c.count)
      .map((text, i) => ({ seq: c.firstSeq + i, text })),
  );
const newRoot = () => mkdtempSync(path.join(os.tmpdir(), 'gantry-journal-'));
const fileOf = (root: string) => path.join(root, 'journal.ndjson');

describe('TaskJournal', () => {
  it('reads back the latest state of each task, also from a new journal on the same folder (an agent restart)', () => {
    const root = newRoot();
    const journal = new TaskJournal(root);
    journal.save(record('t-1'));
    journal.save(record('t-1', { status: 'running', pid: 42 }));
    journal.save(record('t-2'));
    journal.save(
      record('t-1', { status: 'finished', result: { outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 3 } }),
    );
    const reopened = new TaskJournal(root);
    expect(reopened.get('t-1')).toMatchObject({ status: 'finished', result: { lastLogSeq: 3 } });
    expect(reopened.get('t-2')).toMatchObject({ status: 'accepted' });
    expect(
      reopened
        .all()
        .map((r) => r.taskId)
        .sort(),
    ).toEqual(['t-1', 't-2']);
    expect(reopened.get('never')).toBeUndefined();
    // One line per change in one file: the history is appended, not rewritten, and no file or
    // folder is created per task.
    expect(readFileSync(fileOf(root), 'utf8').trim().split('\n')).toHaveLength(4);
    expect(readdirSync(root)).toEqual(['journal.ndjson']);
  });

  it('hands out copies: changing a record read from it changes nothing until it is saved', () => {
    const journal = new TaskJournal(newRoot());
    journal.save(record('t-1'));
    const read = journal.get('t-1')!;
    read.status = 'finished';
    expect(journal.get('t-1')?.status).toBe('accepted');
  });

  it('cuts off a torn last line at start, so the next record is not glued onto it', () => {
    const root = newRoot();
    const journal = new TaskJournal(root);
    journal.save(record('t-1', { status: 'running', pid: 7 }));
    journal.close();
    appendFileSync(fileOf(root), '{"state":{"taskId":"t-1","status":"fin');
    const reopened = new TaskJournal(root);
    expect(reopened.get('t-1')).toMatchObject({ status: 'running', pid: 7 });
    reopened.save(record('t-2'));
    const again = new TaskJournal(root);
    expect(again.get('t-2')).toMatchObject({ status: 'accepted' });
    expect(again.get('t-1')).toMatchObject({ status: 'running' });
  });

  it('keeps lines until forgotten, reads them back after a seq in batches of about maxBytes, and across a restart', () => {
    const root = newRoot();
    const journal = new TaskJournal(root);
    journal.save(record('t-1'));
    journal.appendChunk('t-1', chunk(line(1, 'aaaa'), line(2, 'bbbb')));
    journal.save(record('t-2'));
    journal.appendChunk('t-2', chunk(line(1, 'other task')));
    journal.appendChunk('t-1', chunk(line(3, 'cccc'), line(4, 'dddd')));
    expect(journal.lastSeq('t-1')).toBe(4);
    expect(linesOf(journal.readChunks('t-1', 0, 1_000)).map((l) => l.text)).toEqual(['aaaa', 'bbbb', 'cccc', 'dddd']);
    // From inside a chunk: the chunk is cut to start after the seq; whole chunks up to maxBytes.
    expect(linesOf(journal.readChunks('t-1', 1, 8)).map((l) => l.seq)).toEqual([2]);
    expect(linesOf(journal.readChunks('t-1', 1, 20)).map((l) => l.seq)).toEqual([2, 3, 4]);
    expect(linesOf(journal.readChunks('t-1', 3, 1)).map((l) => l.seq)).toEqual([4]); // at least one chunk
    const reopened = new TaskJournal(root);
    expect(reopened.lastSeq('t-1')).toBe(4);
    expect(linesOf(reopened.readChunks('t-1', 2, 1_000)).map((l) => l.text)).toEqual(['cccc', 'dddd']);
    expect(linesOf(reopened.readChunks('t-2', 0, 1_000)).map((l) => l.text)).toEqual(['other task']);
  });

  it('reads back a record longer than its read buffer (1 MiB) at start', () => {
    const root = newRoot();
    const journal = new TaskJournal(root);
    journal.save(record('t-big'));
    const big = 'x'.repeat(1536 * 1024);
    journal.appendChunk('t-big', chunk(line(1, 'small'), line(2, big)));
    journal.save(record('t-after', { status: 'running' }));
    const reopened = new TaskJournal(root);
    expect(linesOf(reopened.readChunks('t-big', 1, 10 * 1024 * 1024)).map((l) => l.text.length)).toEqual([big.length]);
    expect(reopened.get('t-after')).toMatchObject({ status: 'running' });
  });

  it('forgets logs but keeps a tombstone, and prunes old tombstones (for good: the file is rewritten)', () => {
    const root = newRoot();
    const journal = new TaskJournal(root);
    journal.save(record('t-1', { status: 'finished', finishedUnixMs: 10 }));
    journal.appendChunk('t-1', chunk(line(1, 'hello')));
    journal.save(record('t-2', { status: 'finished', finishedUnixMs: 20 }));
    journal.forget(journal.get('t-2')!);
    expect(journal.lastSeq('t-1')).toBe(1);
    journal.forget(journal.get('t-1')!);
    expect(journal.lastSeq('t-1')).toBe(0);
    expect(journal.readChunks('t-1', 0, 1_000)).toEqual([]);
    expect(journal.get('t-1')).toMatchObject({ forgotten: true });
    expect(new TaskJournal(root).lastSeq('t-1')).toBe(0);

    journal.prune(11);
    expect(journal.get('t-1')).toBeUndefined();
    expect(journal.get('t-2')).toMatchObject({ forgotten: true });
    expect(readFileSync(fileOf(root), 'utf8')).not.toContain('"t-1"');
    expect(new TaskJournal(root).get('t-1')).toBeUndefined();
    // An id that comes back is a new task.
    journal.save(record('t-1'));
    expect(new TaskJournal(root).get('t-1')).toMatchObject({ status: 'accepted', forgotten: false });
  });

  it('rewrites the file once it is mostly history, keeping every state and the lines not yet forgotten', () => {
    const root = newRoot();
    const journal = new TaskJournal(root, { compactAtBytes: 16 * 1024 });
    journal.save(record('kept'));
    journal.appendChunk('kept', chunk(line(1, 'still needed')));
    for (let i = 0; i < 300; i++) {
      const id = `t-${i}`;
      journal.save(record(id));
      journal.appendChunk(id, chunk(line(1, 'x'.repeat(200))));
      journal.save(record(id, { status: 'finished', finishedUnixMs: 5 }));
      journal.forget(journal.get(id)!);
    }
    journal.appendChunk('kept', chunk(line(2, 'also needed')));
    // 300 tasks wrote ~150 KiB; what is live is their tombstones and two lines.
    expect(statSync(fileOf(root)).size).toBeLessThan(120 * 1024);
    expect(existsSync(`${fileOf(root)}.next`)).toBe(false);
    for (const journalNow of [journal, new TaskJournal(root)]) {
      expect(journalNow.all()).toHaveLength(301);
      expect(journalNow.get('t-299')).toMatchObject({ forgotten: true });
      expect(linesOf(journalNow.readChunks('kept', 0, 1_000)).map((l) => l.text)).toEqual([
        'still needed',
        'also needed',
      ]);
      expect(journalNow.lastSeq('kept')).toBe(2);
    }
  });

  it("takes over the tasks of an earlier agent's folder per task (state.ndjson, state.json, logs.ndjson) and removes the folders", () => {
    const root = newRoot();
    mkdirSync(path.join(root, 't-old'));
    writeFileSync(
      path.join(root, 't-old', 'state.json'),
      JSON.stringify(record('t-old', { status: 'running', pid: 9 })),
    );
    mkdirSync(path.join(root, 't-newer'));
    writeFileSync(
      path.join(root, 't-newer', 'state.ndjson'),
      [
        JSON.stringify(record('t-newer')),
        JSON.stringify(
          record('t-newer', {
            status: 'finished',
            result: { outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 2 },
          }),
        ),
        '{"torn',
      ].join('\n'),
    );
    writeFileSync(
      path.join(root, 't-newer', 'logs.ndjson'),
      `${JSON.stringify(line(1))}\n${JSON.stringify(line(2))}\n`,
    );
    const journal = new TaskJournal(root);
    expect(journal.get('t-old')).toMatchObject({ status: 'running', pid: 9 });
    expect(journal.get('t-newer')).toMatchObject({ status: 'finished' });
    expect(linesOf(journal.readChunks('t-newer', 0, 1_000)).map((l) => l.seq)).toEqual([1, 2]);
    expect(readdirSync(root)).toEqual(['journal.ndjson']);
    const reopened = new TaskJournal(root);
    expect(
      reopened
        .all()
        .map((r) => r.taskId)
        .sort(),
    ).toEqual(['t-newer', 't-old']);
    expect(reopened.lastSeq('t-newer')).toBe(2);
  });

  it('reads the per-line log records of an agent before chunks as chunks', () => {
    const root = newRoot();
    writeFileSync(
      fileOf(root),
      `${JSON.stringify({ state: record('t-lines') })}\n${JSON.stringify({ logs: { taskId: 't-lines', lines: [line(1, 'one'), line(2, 'two')] } })}\n`,
    );
    const journal = new TaskJournal(root);
    expect(journal.lastSeq('t-lines')).toBe(2);
    expect(linesOf(journal.readChunks('t-lines', 1, 1_000))).toEqual([{ seq: 2, text: 'two' }]);
  });
});
