/**
 * bench/archives: the hostile-archive corpus of #10 at the control plane's upload check and at
 * the agent's extraction, each in a process of its own (test/helpers/archive-probe.ts), against
 * `tar -xzf` / `unzip -l`-free baselines. Prints a table; goals: RSS growth ≤ 128 MiB everywhere,
 * unpack time of the legitimate 2 GiB tar.gz ≤ 1.5 × `tar -xzf` of the same file (interleaved
 * rounds, medians). Exits non-zero only when a run itself fails (an outcome other than expected).
 *
 *   npx tsx bench/archives/archives.ts [--rounds 3]
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { deflatedZip, gzipBomb, largeTarGz, manyFilesTarGz } from '../../test/helpers/large-archives.ts';

const run = promisify(execFile);
const probe = fileURLToPath(new URL('../../test/helpers/archive-probe.ts', import.meta.url));
const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1] || 3) || 3;

interface Probe {
  ok: boolean;
  message: string;
  baselineMiB: number;
  peakMiB: number;
  ms: number;
}

async function inOwnProcess(mode: 'check' | 'extract', file: string): Promise<Probe> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', probe, mode, file], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Probe;
}

function tarXzf(file: string): number {
  const dir = mkdtempSync(path.join(tmpdir(), 'bench-tar-'));
  const started = performance.now();
  const result = spawnSync('tar', ['-xzf', file, '-C', dir]);
  const ms = performance.now() - started;
  rmSync(dir, { recursive: true, force: true });
  if (result.status !== 0) throw new Error(`tar -xzf failed: ${result.stderr.toString()}`);
  return ms;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const mark = (ok: boolean) => (ok ? '✓' : '✗');

const corpus = [
  { name: 'gzip bomb: 2 MB → 2 GiB of zeros', file: await gzipBomb(), expect: false },
  { name: 'legitimate 2 GiB tar.gz (ratio ~600)', file: await largeTarGz(), expect: true },
  { name: '100,000 tiny files (tar.gz)', file: await manyFilesTarGz(99_000), expect: true },
  { name: 'zip: 10 MB → 5 GiB (ratio ~500)', file: await deflatedZip(80, 64), expect: false },
];

let failed = false;
console.log(`| archive | check (control plane) | growth | extract (agent) | growth | time |`);
console.log(`|---|---|---|---|---|---|`);
for (const item of corpus) {
  const check = await inOwnProcess('check', item.file);
  const extract = await inOwnProcess('extract', item.file);
  if (check.ok !== item.expect || extract.ok !== item.expect) failed = true;
  const growthCheck = check.peakMiB - check.baselineMiB;
  const growthExtract = extract.peakMiB - extract.baselineMiB;
  console.log(
    `| ${item.name} | ${check.ok ? 'accepted' : 'refused'} in ${check.ms} ms | ${growthCheck} MiB ${mark(growthCheck <= 128)} | ` +
      `${extract.ok ? 'unpacked' : 'refused'} | ${growthExtract} MiB ${mark(growthExtract <= 128)} | ${extract.ms} ms |`,
  );
  if (!extract.ok) console.log(`|   ↳ agent: ${extract.message} | | | | | |`);
}

// Unpack time against tar -xzf, interleaved so both see the same machine.
const large = await largeTarGz();
const ours: number[] = [];
const tars: number[] = [];
for (let i = 0; i < rounds; i++) {
  ours.push((await inOwnProcess('extract', large)).ms);
  tars.push(tarXzf(large));
}
const ratio = median(ours) / median(tars);
console.log(
  `\nlegitimate 2 GiB tar.gz, ${rounds} interleaved rounds: agent median ${Math.round(median(ours))} ms, ` +
    `tar -xzf median ${Math.round(median(tars))} ms → ${ratio.toFixed(2)}× ${mark(ratio <= 1.5)} (goal ≤ 1.5×)`,
);
process.exit(failed ? 1 : 0);
