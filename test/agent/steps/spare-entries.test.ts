import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { emptyFolder, SpareEntries } from '../../../agent/steps/spare-entries.ts';
import { waitFor } from './task-harness.ts';

let root: string;

beforeEach(() => {
  root = mkdtempSync(path.join(tmpdir(), 'gantry-spares-'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

const inodesIn = (dir: string) => new Set(readdirSync(dir).map((name) => statSync(path.join(dir, name)).ino));

describe('SpareEntries', () => {
  it('makes the spares in the background and renames one into place, then makes another', async () => {
    const spares = new SpareEntries(path.join(root, '.spare'), 'file', 2);
    await waitFor(() => spares.ready === 2);
    const made = inodesIn(path.join(root, '.spare'));
    const target = path.join(root, 'task-1.sh');
    expect(spares.take(target)).toBe(true);
    const taken = statSync(target);
    expect(made.has(taken.ino)).toBe(true);
    expect(taken.size).toBe(0);
    expect(taken.mode & 0o777).toBe(0o600);
    await waitFor(() => spares.ready === 2);
    expect(readdirSync(path.join(root, '.spare'))).toHaveLength(2);
  });

  it('answers false when none is ready, and drops a spare whose rename failed', async () => {
    const spares = new SpareEntries(path.join(root, '.spare'), 'folder', 1);
    expect(spares.take(path.join(root, 'early'))).toBe(false);
    expect(existsSync(path.join(root, 'early'))).toBe(false);
    await waitFor(() => spares.ready === 1);
    expect(spares.take(path.join(root, 'no-such-parent', 'task'))).toBe(false);
    expect(existsSync(path.join(root, 'no-such-parent'))).toBe(false);
    await waitFor(() => spares.ready === 1);
    expect(readdirSync(path.join(root, '.spare'))).toHaveLength(1);
  });

  it('empties its folder when made (a crash may leave spares)', () => {
    mkdirSync(path.join(root, '.spare', 'left'), { recursive: true });
    writeFileSync(path.join(root, '.spare', 'left', 'x'), 'x');
    new SpareEntries(path.join(root, '.spare'), 'folder', 0);
    expect(readdirSync(path.join(root, '.spare'))).toEqual([]);
  });
});

describe('emptyFolder', () => {
  it('takes spares for a missing parent and the folder itself (0700)', async () => {
    const spares = new SpareEntries(path.join(root, '.spare'), 'folder', 2);
    await waitFor(() => spares.ready === 2);
    const made = inodesIn(path.join(root, '.spare'));
    const target = path.join(root, 'deployment-1', 'task-1');
    emptyFolder(spares, target);
    expect(made.has(statSync(path.join(root, 'deployment-1')).ino)).toBe(true);
    expect(made.has(statSync(target).ino)).toBe(true);
    expect(statSync(target).mode & 0o777).toBe(0o700);
    expect(readdirSync(target)).toEqual([]);
  });

  it('makes the folders itself when no spare is ready', () => {
    const spares = new SpareEntries(path.join(root, '.spare'), 'folder', 0);
    const target = path.join(root, 'deployment-1', 'task-1');
    emptyFolder(spares, target);
    expect(readdirSync(target)).toEqual([]);
  });

  it('empties a folder a crash left behind, with or without a spare', async () => {
    for (const keep of [0, 2]) {
      const spares = new SpareEntries(path.join(root, `.spare-${keep}`), 'folder', keep);
      await waitFor(() => spares.ready === keep);
      const target = path.join(root, `deployment-${keep}`, 'task-1');
      mkdirSync(path.join(target, 'half-unpacked'), { recursive: true });
      writeFileSync(path.join(target, 'half-unpacked', 'file'), 'x');
      emptyFolder(spares, target);
      expect(readdirSync(target)).toEqual([]);
    }
  });
});
