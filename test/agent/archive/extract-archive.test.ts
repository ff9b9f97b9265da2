import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArchiveRefusedError, detectArchiveFormat, extractArchive } from '../../../agent/archive/index.ts';
import { buildTar, buildZip, type TarEntrySpec, type ZipEntrySpec } from './archive-builders.ts';

let root: string;
let target: string;

beforeEach(async () => {
  // root/sandbox/target: anything "escaping" by one or two levels would land in root or sandbox.
  root = await mkdtemp(path.join(tmpdir(), 'gantry-archive-'));
  target = path.join(root, 'sandbox', 'target');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function writeArchive(name: string, bytes: Buffer): Promise<string> {
  const file = path.join(root, name);
  await writeFile(file, bytes);
  return file;
}

/** Every file under root except the archives themselves. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.filter((entry) => !/^[^/]+\.(zip|nupkg|tar|tgz)$/.test(entry)).sort();
}

async function expectRefused(file: string, message: RegExp): Promise<void> {
  const error = await extractArchive(file, target).catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(ArchiveRefusedError);
  expect((error as Error).message).toMatch(message);
  // Nothing written anywhere: not the target, not a staging folder, not outside.
  expect((await filesUnder(root)).filter((entry) => entry !== 'sandbox')).toEqual([]);
  await expect(stat('/tmp/gantry-evil.txt')).rejects.toThrow(/ENOENT/);
}

describe('extractArchive (zip)', () => {
  it('extracts files and folders and keeps the executable bit when the zip is benign', async () => {
    const file = await writeArchive(
      'ok.zip',
      buildZip([
        { name: 'bin/' },
        { name: 'bin/run.sh', data: '#!/bin/sh\necho hi\n', unixMode: 0o100755, deflate: true },
        { name: 'readme.txt', data: 'hello' },
      ]),
    );
    expect(await extractArchive(file, target)).toBe('zip');
    expect(await readFile(path.join(target, 'readme.txt'), 'utf8')).toBe('hello');
    expect((await stat(path.join(target, 'bin/run.sh'))).mode & 0o111).not.toBe(0);
  });

  const hostile: Array<[string, ZipEntrySpec, RegExp]> = [
    ['a ../ entry', { name: '../evil.txt', data: 'x' }, /"\.\.\/evil\.txt" escapes the target folder/],
    ['a nested ../../ entry', { name: 'ok/../../evil.txt', data: 'x' }, /escapes the target folder/],
    ['an absolute path', { name: '/tmp/gantry-evil.txt', data: 'x' }, /is an absolute path/],
    ['a drive letter', { name: 'C:/evil.txt', data: 'x' }, /drive letter/],
    ['a backslash traversal', { name: '..\\..\\evil.txt', data: 'x' }, /escapes the target folder/],
    ['a symlink entry', { name: 'link', data: '/etc/passwd', unixMode: 0o120777 }, /is a symbolic link/],
  ];
  it.each(hostile)('refuses the archive and writes nothing when it holds %s', async (_label, evil, message) => {
    const file = await writeArchive(
      'evil.zip',
      buildZip([{ name: 'first.txt', data: 'written before the evil entry' }, evil]),
    );
    await expectRefused(file, message);
  });

  it('refuses an entry that appears twice', async () => {
    const file = await writeArchive(
      'dup.zip',
      buildZip([
        { name: 'a.txt', data: '1' },
        { name: 'a.txt', data: '2' },
      ]),
    );
    await expectRefused(file, /appears twice/);
  });

  it('refuses when the entry count exceeds the limit', async () => {
    const file = await writeArchive('many.zip', buildZip([{ name: 'a' }, { name: 'b' }, { name: 'c' }]));
    await expect(extractArchive(file, target, { limits: { maxEntries: 2 } })).rejects.toThrow(
      /3 entries exceed the limit of 2/,
    );
  });

  it('refuses a zip bomb by total size and by compression ratio', async () => {
    const zeros = Buffer.alloc(4 * 1024 * 1024);
    const file = await writeArchive('bomb.zip', buildZip([{ name: 'zeros.bin', data: zeros, deflate: true }]));
    await expect(extractArchive(file, target, { maxUnpackedBytes: 1024 * 1024 })).rejects.toThrow(
      /exceeds 1048576 bytes/,
    );
    await expect(extractArchive(file, target, { limits: { maxCompressionRatio: 100 } })).rejects.toThrow(
      /compression ratio/,
    );
    expect(await filesUnder(root)).toEqual(['sandbox']);
  });

  it('refuses to extract into a folder that already exists', async () => {
    const file = await writeArchive('ok.zip', buildZip([{ name: 'a.txt', data: 'a' }]));
    await extractArchive(file, target);
    await expect(extractArchive(file, target)).rejects.toThrow(/already exists/);
  });
});

describe('extractArchive (nupkg)', () => {
  const opcParts: ZipEntrySpec[] = [
    { name: '[Content_Types].xml', data: '<Types/>' },
    { name: '_rels/.rels', data: '<Relationships/>' },
    { name: 'package/services/metadata/core-properties/1.psmdcp', data: '<x/>' },
    { name: 'Acme.Web.nuspec', data: '<package/>' },
  ];

  it('skips the OPC parts and URL-decodes entry names', async () => {
    const file = await writeArchive(
      'acme.nupkg',
      buildZip([...opcParts, { name: 'content/my%20file.txt', data: 'spaced' }]),
    );
    expect(await detectArchiveFormat(file)).toBe('nupkg');
    expect(await extractArchive(file, target)).toBe('nupkg');
    expect((await readdir(target, { recursive: true })).sort()).toEqual([
      'Acme.Web.nuspec',
      'content',
      'content/my file.txt',
    ]);
  });

  it('refuses a name that escapes only after URL-decoding', async () => {
    const file = await writeArchive('evil.nupkg', buildZip([...opcParts, { name: '%2e%2e/evil.txt', data: 'x' }]));
    await expectRefused(file, /"\.\.\/evil\.txt" escapes the target folder/);
  });
});

describe('extractArchive (tar, tar.gz)', () => {
  for (const gzip of [false, true]) {
    const kind = gzip ? 'tar.gz' : 'tar';
    const fileName = gzip ? 'a.tgz' : 'a.tar';

    it(`extracts a benign ${kind}`, async () => {
      const file = await writeArchive(
        fileName,
        buildTar(
          [
            { path: 'app/', type: 'Directory', mode: 0o755 },
            { path: 'app/run.sh', data: 'echo hi', mode: 0o755 },
          ],
          gzip,
        ),
      );
      expect(await extractArchive(file, target)).toBe(kind);
      expect(await readFile(path.join(target, 'app/run.sh'), 'utf8')).toBe('echo hi');
    });

    const hostile: Array<[string, TarEntrySpec, RegExp]> = [
      ['a ../ entry', { path: '../evil.txt', data: 'x' }, /escapes the target folder/],
      ['an absolute path', { path: '/tmp/gantry-evil.txt', data: 'x' }, /is an absolute path/],
      ['a symlink', { path: 'link', type: 'SymbolicLink', linkpath: '/etc' }, /is a symbolic link/],
      ['a relative symlink out', { path: 'up', type: 'SymbolicLink', linkpath: '../..' }, /is a symbolic link/],
      ['a hardlink', { path: 'hard', type: 'Link', linkpath: '/etc/passwd' }, /is a hard link/],
      ['a fifo', { path: 'pipe', type: 'FIFO' }, /FIFO entry/],
    ];
    it.each(hostile)(`refuses a ${kind} holding %s and leaves no partial target`, async (_label, evil, message) => {
      const file = await writeArchive(
        fileName,
        buildTar([{ path: 'first.txt', data: 'first' }, evil, { path: 'last.txt', data: 'l' }], gzip),
      );
      await expectRefused(file, message);
    });
  }

  it('refuses a file that is no archive', async () => {
    const file = await writeArchive('plain.tar', Buffer.from('just text, not an archive'));
    await expectRefused(file, /not a zip, nupkg, tar or tar.gz/);
  });
});
