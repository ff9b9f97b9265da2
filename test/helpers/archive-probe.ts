/**
 * Runs one archive operation in a process of its own and reports its memory: the control plane's
 * upload check (`check`) or the agent's extraction (`extract`). Printed as one JSON line:
 * { ok, message, baselineMiB, peakMiB, ms }. peakMiB is the kernel's high-water mark (VmHWM), so
 * no spike between samples is missed. Usage: node --import tsx archive-probe.ts check|extract FILE [maxUnpackedBytes]
 */
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { extractArchive } from '../../agent/archive/index.ts';
import { checkArchive } from '../../services/packages/archive-check.ts';
import { PackageType } from '../../services/packages/file-name.ts';

function statusKiB(field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(match?.[1] ?? 0);
}

const [mode, file, maxUnpacked] = process.argv.slice(2);
const target = path.join(tmpdir(), `gantry-probe-${process.pid}`, 'out');
const baselineKiB = statusKiB('VmRSS');
const started = Date.now();
let ok = true;
let message = '';
try {
  if (mode === 'check') {
    const type = file!.endsWith('.zip')
      ? PackageType.Zip
      : file!.endsWith('.tar')
        ? PackageType.Tar
        : PackageType.TarGz;
    await checkArchive(file!, type, 'PackageFile');
  } else {
    await extractArchive(file!, target, maxUnpacked ? { maxUnpackedBytes: Number(maxUnpacked) } : {});
  }
} catch (error) {
  ok = false;
  message = (error as Error).message;
}
const result = {
  ok,
  message,
  baselineMiB: Math.round(baselineKiB / 1024),
  peakMiB: Math.round(statusKiB('VmHWM') / 1024),
  ms: Date.now() - started,
};
rmSync(path.dirname(target), { recursive: true, force: true });
process.stdout.write(`${JSON.stringify(result)}\n`);
