/**
 * The agent's package cache: a download that fails, at once or part way, or that fails its
 * checksum, leaves no partial file behind; a good one is cached under its version.
 */
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { PackageCache } from '../../../agent/steps/package-cache.ts';
import { filesUnder } from '../../helpers/files.ts';

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-package-cache-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

const data = Buffer.alloc(4096, 7);
const sha256 = createHash('sha256').update(data).digest('hex');
const ref = (version: string, sha = sha256) => ({
  packageId: 'Acme.Web',
  version,
  sha256: sha,
  sizeBytes: String(data.length),
  format: 'zip',
});
const options = () => ({ redownload: false, signal: new AbortController().signal });

it('leaves no partial file when the download fails at once, every time', async () => {
  // The partial file exists before the download starts: a cleanup that runs before the file is
  // created would miss it.
  const partialOnDisk: boolean[] = [];
  const cache = new PackageCache(root, {
    download: (_id, version) => {
      const dir = path.join(root, 'Acme.Web', version);
      partialOnDisk.push(readdirSync(dir).some((name) => name.startsWith('package.download-')));
      return new Readable({
        read() {
          this.destroy(new Error('control plane went away'));
        },
      });
    },
  });
  for (let i = 0; i < 100; i++) {
    await expect(cache.get(ref(`1.0.${i}`), options())).rejects.toThrow('control plane went away');
    expect(await filesUnder(root)).toEqual([]);
  }
  expect(partialOnDisk).toEqual(Array(100).fill(true));
});

it('leaves no partial file when the download fails part way or fails its checksum', async () => {
  const cache = new PackageCache(root, {
    download: (_id, version) =>
      version === '2.0.0'
        ? Readable.from(
            (async function* () {
              yield data.subarray(0, 1024);
              throw new Error('stream reset');
            })(),
          )
        : Readable.from([data]),
  });
  await expect(cache.get(ref('2.0.0'), options())).rejects.toThrow('stream reset');
  await expect(cache.get(ref('3.0.0', 'a'.repeat(64)), options())).rejects.toThrow('failed verification');
  expect(await filesUnder(root)).toEqual([]);

  const file = await cache.get(ref('4.0.0'), options());
  expect(await fs.readFile(file)).toEqual(data);
  expect((await filesUnder(root)).sort()).toEqual(['Acme.Web/4.0.0/package', 'Acme.Web/4.0.0/package.sha256']);
});
