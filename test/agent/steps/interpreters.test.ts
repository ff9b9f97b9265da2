import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { findExecutable, interpreterFor } from '../../../agent/steps/interpreters.ts';

describe('findExecutable', () => {
  it('takes the first executable file of that name on the PATH, passing over missing, non-executable and folder entries', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'gantry-path-'));
    const [missing, notExecutable, folder, right, later] = ['missing', 'plain', 'folder', 'right', 'later'].map(
      (name) => path.join(root, name),
    );
    for (const dir of [notExecutable, folder, right, later]) mkdirSync(dir!);
    writeFileSync(path.join(notExecutable!, 'tool'), '#!/bin/sh\n');
    chmodSync(path.join(notExecutable!, 'tool'), 0o644);
    mkdirSync(path.join(folder!, 'tool'));
    for (const dir of [right, later]) writeFileSync(path.join(dir!, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    const searchPath = ['', missing, notExecutable, folder, right, later].join(path.delimiter);
    // root may execute any file with an x bit, but none is set on 'plain/tool'.
    expect(findExecutable('tool', searchPath)).toBe(path.join(right!, 'tool'));
    expect(findExecutable('nothing-like-this', searchPath)).toBeUndefined();
    expect(findExecutable('tool', undefined)).toBeUndefined();
  });

  it('knows the script languages case-insensitively', () => {
    expect(interpreterFor(' Bash ')?.command).toBe('bash');
    expect(interpreterFor('PowerShell')?.command).toBe('pwsh');
    expect(interpreterFor('ruby')).toBeUndefined();
  });
});
