/**
 * The hostile-archive corpus at both ends, each in a process of its own so its memory is its own:
 * the control plane's upload check and the agent's extraction refuse a 2 MB gzip bomb (2 GiB of
 * zeros) and a zip over the unpacked-size cap, and handle a legitimate 2 GiB package and
 * thousands of tiny files, all with peak RSS growth ≤ 128 MiB. Traversal, links and the other
 * small hostile entries are covered by extract-archive.test.ts; times and the comparison with
 * `tar -xzf` are in bench/archives.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { deflatedZip, gzipBomb, largeTarGz, manyFilesTarGz } from '../../helpers/large-archives.ts';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('../../helpers/archive-probe.ts', import.meta.url));
const GROWTH_LIMIT_MIB = 128;

interface ProbeResult {
  ok: boolean;
  message: string;
  baselineMiB: number;
  peakMiB: number;
  ms: number;
}

async function inOwnProcess(mode: 'check' | 'extract', file: string, maxUnpackedBytes?: number): Promise<ProbeResult> {
  const args = ['--import', 'tsx', probe, mode, file, ...(maxUnpackedBytes ? [String(maxUnpackedBytes)] : [])];
  const { stdout } = await run(process.execPath, args, { maxBuffer: 1024 * 1024 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ProbeResult;
}

function growth(result: ProbeResult): number {
  return result.peakMiB - result.baselineMiB;
}

describe('a gzip bomb (2 MB of gzip, 2 GiB of zeros)', () => {
  it('is refused by the upload check and by the agent, each within 128 MiB of memory', async () => {
    const bomb = await gzipBomb();
    const [check, extract] = [await inOwnProcess('check', bomb), await inOwnProcess('extract', bomb)];
    expect(check).toMatchObject({ ok: false, message: expect.stringContaining('decompression bomb') });
    expect(extract).toMatchObject({ ok: false, message: expect.stringContaining('decompression bomb') });
    expect(growth(check)).toBeLessThanOrEqual(GROWTH_LIMIT_MIB);
    expect(growth(extract)).toBeLessThanOrEqual(GROWTH_LIMIT_MIB);
  }, 120_000);
});

describe('a legitimate 2 GiB tar.gz (ratio ~600)', () => {
  it('passes the upload check and unpacks on the agent, each within 128 MiB of memory', async () => {
    const large = await largeTarGz();
    const check = await inOwnProcess('check', large);
    expect(check).toMatchObject({ ok: true });
    expect(growth(check)).toBeLessThanOrEqual(GROWTH_LIMIT_MIB);
    const extract = await inOwnProcess('extract', large);
    expect(extract).toMatchObject({ ok: true });
    expect(growth(extract)).toBeLessThanOrEqual(GROWTH_LIMIT_MIB);
  }, 180_000);
});

describe('10,000 tiny files', () => {
  it('unpack with at most a few files open at once, within 128 MiB of memory', async () => {
    const extract = await inOwnProcess('extract', await manyFilesTarGz(10_000));
    expect(extract).toMatchObject({ ok: true });
    expect(growth(extract)).toBeLessThanOrEqual(GROWTH_LIMIT_MIB);
  }, 120_000);
});

describe('a zip whose content exceeds the unpacked-size cap (ratio ~500, like 10 MB → 5 GB)', () => {
  it('is refused by the agent before anything is written, and by the upload check', async () => {
    // 24 × 64 MiB = 1.5 GiB declared against a 1 GiB cap: the shape of the 10 MB → 5 GB zip, smaller.
    const zip = await deflatedZip(24, 64);
    const extract = await inOwnProcess('extract', zip, 1024 ** 3);
    expect(extract).toMatchObject({
      ok: false,
      message: expect.stringMatching(/content \(1610612736 bytes\) exceeds 1073741824 bytes/),
    });
    expect(extract.ms).toBeLessThan(5_000);
    // The 10 MB zip of 5 GiB itself, against the default cap (4 GiB, or 10 × the package).
    const bigger = await deflatedZip(80, 64);
    expect(await inOwnProcess('extract', bigger)).toMatchObject({
      ok: false,
      message: expect.stringMatching(/content \(5368709120 bytes\) exceeds 4294967296 bytes/),
    });
    const check = await inOwnProcess('check', bigger);
    expect(check).toMatchObject({ ok: false, message: expect.stringContaining('exceeds') });
  }, 120_000);
});
