import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
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

describe('TaskJournal', () => {
  it('reads back the latest state of each task, also from a new journal on the same folder (an agent restart)', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'gantry-journal-'));
    const journal = new TaskJournal(root);
    journal.save(record('t-1'));
    journal.save(record('t-1', { status: 'running', pid: 42 }));
    journal.save(record('t-2'));
    journal.save(record('t-1', { status: 'finished', result: { outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 3 } }));
    const reopened = new TaskJournal(root);
    expect(reopened.get('t-1')).toMatchObject({ status: 'finished', result: { lastLogSeq: 3 } });
    expect(reopened.get('t-2')).toMatchObject({ status: 'accepted' });
    expect(reopened.all().map((r) => r.taskId).sort()).toEqual(['t-1', 't-2']);
    expect(reopened.get('never')).toBeUndefined();
    // One line per change: the history is appended, not rewritten.
    expect(readFileSync(path.join(root, 't-1', 'state.ndjson'), 'utf8').trim().split('\n')).toHaveLength(3);
  });

  it('falls back to the last whole record when the file ends with a partial one', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'gantry-journal-'));
    const journal = new TaskJournal(root);
    journal.save(record('t-1', { status: 'running', pid: 7 }));
    appendFileSync(path.join(root, 't-1', 'state.ndjson'), '{"taskId":"t-1","status":"fin');
    expect(journal.get('t-1')).toMatchObject({ status: 'running', pid: 7 });
  });

  it("still knows a task recorded by an earlier agent's state.json, and moves on to state.ndjson", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'gantry-journal-'));
    mkdirSync(path.join(root, 't-old'));
    writeFileSync(path.join(root, 't-old', 'state.json'), JSON.stringify(record('t-old', { status: 'running', pid: 9 })));
    const journal = new TaskJournal(root);
    expect(journal.get('t-old')).toMatchObject({ status: 'running', pid: 9 });
    expect(journal.all().map((r) => r.taskId)).toEqual(['t-old']);
    journal.save(record('t-old', { status: 'finished' }));
    expect(journal.get('t-old')).toMatchObject({ status: 'finished' });
  });

  it('forgets logs but keeps a tombstone, and prunes old tombstones', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'gantry-journal-'));
    const journal = new TaskJournal(root);
    journal.save(record('t-1', { status: 'finished', finishedUnixMs: 10 }));
    journal.appendLogs('t-1', [{ seq: 1, stream: 'STDOUT', text: 'hello', unixNanos: '1' }]);
    expect(journal.lastSeq('t-1')).toBe(1);
    journal.forget(journal.get('t-1')!);
    expect(journal.lastSeq('t-1')).toBe(0);
    expect(journal.get('t-1')).toMatchObject({ forgotten: true });
    journal.prune(11);
    expect(journal.get('t-1')).toBeUndefined();
    // A pruned task's folder is created again if the id ever comes back.
    journal.save(record('t-1'));
    expect(journal.get('t-1')).toMatchObject({ status: 'accepted' });
  });
});
