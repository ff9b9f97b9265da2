// Folders and files made ahead of need. A task's start needs two new folders
// (work/<deploymentId>/<taskId>) and a new script file, all between its RunTask and its script's
// first line, and creating an inode is what costs there: 0.1–0.9 ms of kernel time a folder and
// 0.3–1 ms a file on ext4 on the VMs measured (more after many deletions), against ~0.02 ms to
// rename one. So a few empty ones are made ahead (libuv's thread pool, off the event loop) a
// little after each use, when the step's burst of work is over, and renamed into place; when none
// is ready the caller makes its own, as before.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Spares are made again this long after one was taken: the task that took it is starting now. */
const REFILL_DELAY_MS = 100;

export type SpareKind = 'folder' | 'file';

export class SpareEntries {
  readonly #dir: string;
  readonly #kind: SpareKind;
  readonly #keep: number;
  readonly #ready: string[] = [];
  #making = 0;
  #next = 0;
  #refillTimer: NodeJS.Timeout | undefined;

  /**
   * Spares live in `dir` (emptied now: a crash may leave some), which must be on the file system
   * of their targets: a rename does not cross file systems. Folders are 0700, files 0600 and empty.
   */
  constructor(dir: string, kind: SpareKind, keep: number) {
    this.#dir = dir;
    this.#kind = kind;
    this.#keep = keep;
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.#refill();
  }

  /** Spares ready now (tests). */
  get ready(): number {
    return this.#ready.length;
  }

  /**
   * Renames a spare to `target`; false when none was ready or the rename failed (no parent, a
   * non-empty folder there): then nothing at `target` changed and the caller makes it itself.
   */
  take(target: string): boolean {
    const spare = this.#ready.pop();
    if (!this.#refillTimer)
      this.#refillTimer = setTimeout(() => {
        this.#refillTimer = undefined;
        this.#refill();
      }, REFILL_DELAY_MS).unref();
    if (spare === undefined) return false;
    try {
      renameSync(spare, target);
      return true;
    } catch {
      // Dropped rather than kept: a spare whose folder vanished would fail every time.
      rmSync(spare, { recursive: true, force: true });
      return false;
    }
  }

  #refill(): void {
    while (this.#ready.length + this.#making < this.#keep) {
      const name = path.join(this.#dir, String(this.#next++));
      this.#making++;
      const made =
        this.#kind === 'folder' ? mkdir(name, { mode: 0o700 }) : writeFile(name, '', { mode: 0o600, flag: 'wx' });
      made.then(
        () => {
          this.#making--;
          this.#ready.push(name);
        },
        // Not made (disk full, the folder removed): the next take makes its own and asks again.
        () => {
          this.#making--;
        },
      );
    }
  }
}

/**
 * An empty folder at `target`, and its parent if missing: spares renamed into place where ready.
 * A folder already there (left by a crash mid-preparation) is emptied.
 */
export function emptyFolder(spares: SpareEntries, target: string): void {
  const parent = path.dirname(target);
  if (!existsSync(parent) && !spares.take(parent)) mkdirSync(parent, { recursive: true, mode: 0o700 });
  // Renaming a folder over an empty one replaces it; over a non-empty one it fails.
  if (spares.take(target)) return;
  if (mkdirSync(target, { recursive: true, mode: 0o700 }) === undefined) {
    rmSync(target, { recursive: true, force: true });
    mkdirSync(target, { recursive: true, mode: 0o700 });
  }
}
