/**
 * Staging an upload: a refused or failed stream leaves no file behind, whenever it fails.
 */
import { existsSync, readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { stageStream } from '../../../services/packages/staging.ts';

let dir: string;
beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-staging-'));
});
afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

it('creates the staged file before it reads the first byte', async () => {
  // Until the file exists, a failure's cleanup can run before the file is created and miss it.
  const seen: boolean[] = [];
  for (let i = 0; i < 50; i++) {
    const folder = path.join(dir, String(i));
    const source = new Readable({
      read() {
        seen.push(existsSync(folder) && readdirSync(folder).length === 1);
        this.push(Buffer.alloc(64, 1));
        this.push(null);
      },
    });
    const staged = await stageStream(source, folder, 1024, 'PackageFile');
    expect(staged.sizeBytes).toBe(64);
    expect(readdirSync(folder)).toEqual([path.basename(staged.path)]);
  }
  expect(seen).toEqual(Array(50).fill(true));
});

it('leaves nothing when the first chunk is already over the limit, every time', async () => {
  for (let i = 0; i < 300; i++) {
    const source = Readable.from([Buffer.alloc(2048, 1)], { objectMode: false });
    await expect(stageStream(source, dir, 1024, 'PackageFile')).rejects.toThrow('larger than the 1024 bytes limit');
    expect(await fs.readdir(dir)).toEqual([]);
  }
});

it('leaves nothing when the source fails part way', async () => {
  let reads = 0;
  const source = new Readable({
    read() {
      // A first chunk, then the client goes away.
      if (++reads === 1) this.push(Buffer.alloc(512, 1));
      else this.destroy(new Error('client went away'));
    },
  });
  await expect(stageStream(source, dir, 1 << 20, 'PackageFile')).rejects.toThrow('client went away');
  expect(reads).toBe(2);
  expect(await fs.readdir(dir)).toEqual([]);
});

it("fails with the source's error, not an uncaught one, when the source fails before its file is made", async () => {
  // Its error comes while the folder and the file are made, before pipeline() listens: unhandled,
  // it would end the process (vitest reports it as an uncaught exception).
  const source = new Readable({ read() {} });
  const staging = stageStream(source, path.join(dir, 'new-folder'), 1 << 20, 'PackageFile');
  source.destroy(new Error('client went away'));
  await expect(staging).rejects.toThrow('client went away');
  expect(await fs.readdir(path.join(dir, 'new-folder'))).toEqual([]);
});
