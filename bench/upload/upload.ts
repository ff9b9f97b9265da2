/**
 * bench/upload: uploads a generated 1 GiB package through the multipart endpoint, streaming from
 * disk (the client never buffers the file), and reports throughput next to a plain streamed local
 * copy of the same file plus the server's peak RSS growth. The server runs as a child process on
 * a fresh database of the real PostgreSQL, so its memory is measured alone (/proc/<pid>/status).
 *
 *   npx tsx bench/upload/upload.ts            (PostgreSQL at GANTRY_BENCH_PG_URL or 127.0.0.1:5432)
 *   GANTRY_BENCH_SIZE_MIB=256 npx tsx bench/upload/upload.ts   (a smaller run)
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import * as tar from 'tar';
import { freePort } from '../../services/core/index.ts';

const MIB = 1024 * 1024;
const SIZE_BYTES = Number(process.env.GANTRY_BENCH_SIZE_MIB ?? 1024) * MIB;
const PG_ADMIN_URL = process.env.GANTRY_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ACCOUNT = { id: 'bench-admin', key: 'bench-admin-key-0123456789abcdef' };
const TARGET_RATIO = 0.5;
const TARGET_RSS_MIB = 64;

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A tar of exactly `total` bytes: one header, one random file, two zero blocks. Returns its sha256. */
async function generateTar(file: string, total: number): Promise<string> {
  const bodySize = total - 3 * 512;
  const header = new tar.Header({ path: 'payload.bin', mode: 0o644, size: bodySize, mtime: new Date(0), type: 'File' });
  header.encode();
  const hash = createHash('sha256');
  const out = createWriteStream(file);
  const write = (chunk: Buffer) => {
    hash.update(chunk);
    return out.write(chunk) ? Promise.resolve() : new Promise<void>((resolve) => out.once('drain', () => resolve()));
  };
  await write(header.block as Buffer);
  for (let left = bodySize; left > 0;) {
    const n = Math.min(left, 4 * MIB);
    await write(randomBytes(n));
    left -= n;
  }
  await write(Buffer.alloc(1024));
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  return hash.digest('hex');
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  // Read synchronously inside a sampler; /proc files are tiny.
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
  return match ? Number(match[1]) : 0;
}

/** POSTs the multipart form, streaming the file from disk with an exact Content-Length. */
function uploadMultipart(
  port: number,
  workspaceId: string,
  file: string,
  fileName: string,
  size: number,
): Promise<{ status: number; body: string }> {
  const boundary = `----gantrybench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="workspaceId"\r\n\r\n${workspaceId}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="PackageFile"; filename="${fileName}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/packagestore/package',
        headers: {
          authorization: `Basic ${Buffer.from(`${ACCOUNT.id}:${ACCOUNT.key}`).toString('base64')}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': head.length + size + tail.length,
        },
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      },
    );
    request.on('error', reject);
    request.write(head);
    const source = createReadStream(file, { highWaterMark: MIB });
    source.pipe(request, { end: false });
    source.on('error', reject);
    source.on('end', () => request.end(tail));
  });
}

async function api(port: number, pathAndQuery: string): Promise<unknown> {
  const response = await fetch(`http://127.0.0.1:${port}${pathAndQuery}`, {
    headers: { authorization: `Basic ${Buffer.from(`${ACCOUNT.id}:${ACCOUNT.key}`).toString('base64')}` },
  });
  return response.json();
}

async function main(): Promise<void> {
  const work = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-bench-upload-'));
  const database = `gantry_bench_${Date.now()}_${randomBytes(3).toString('hex')}`;
  await admin((c) => c.query(`create database "${database}"`));
  const dbUrl = new URL(PG_ADMIN_URL);
  dbUrl.pathname = `/${database}`;
  const port = await freePort();
  let server: ReturnType<typeof spawn> | null = null;
  try {
    const packageFile = path.join(work, 'Bench.Package.1.0.0.tar');
    process.stdout.write(`generating ${SIZE_BYTES / MIB} MiB package… `);
    const sha256 = await generateTar(packageFile, SIZE_BYTES);
    process.stdout.write('done\n');

    // Baseline: a plain streamed copy of the same file on the same disk (page cache warm for both).
    const copyStart = process.hrtime.bigint();
    await pipeline(createReadStream(packageFile), createWriteStream(path.join(work, 'copy.tar')));
    const copySeconds = Number(process.hrtime.bigint() - copyStart) / 1e9;
    await fs.rm(path.join(work, 'copy.tar'));

    server = spawn(process.execPath, ['--max-old-space-size=1536', '--import', 'tsx', 'services/main.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: dbUrl.toString(),
        GANTRY_DATA_DIR: path.join(work, 'data'),
        GANTRY_PORT: String(port),
        GANTRY_HOST: '127.0.0.1',
        GANTRY_BOOTSTRAP_ACCOUNT_ID: ACCOUNT.id,
        GANTRY_BOOTSTRAP_API_KEY: ACCOUNT.key,
        GANTRY_LOG_LEVEL: 'warn',
        NATS_URL: '',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    const pid = server.pid as number;
    for (let i = 0; ; i++) {
      const up = await fetch(`http://127.0.0.1:${port}/api/openapi.json`).then(
        (r) => r.ok,
        () => false,
      );
      if (up) break;
      if (i > 300) throw new Error('the server did not start');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const workspaces = (await api(port, '/api/workspace')) as {
      workspaces: Array<{ workspaceId: string; name: string }>;
    };
    const workspaceId = workspaces.workspaces.find((w) => w.name === 'Main')?.workspaceId as string;

    // Warm-up: one small upload, so the baseline includes loaded code paths, not just startup.
    const small = path.join(work, 'Warm.Up.1.0.0.tar');
    await generateTar(small, 64 * 1024);
    const warm = await uploadMultipart(port, workspaceId, small, 'Warm.Up.1.0.0.tar', (await fs.stat(small)).size);
    if (warm.status !== 200) throw new Error(`warm-up upload failed: ${warm.status} ${warm.body}`);
    await new Promise((resolve) => setTimeout(resolve, 500));

    const baselineKiB = statusKiB(pid, 'VmRSS');
    // Reset the kernel's peak-RSS counter so VmHWM covers the upload only.
    await fs.writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => undefined);
    let peakKiB = baselineKiB;
    const sampler = setInterval(() => (peakKiB = Math.max(peakKiB, statusKiB(pid, 'VmRSS'))), 20);

    const start = process.hrtime.bigint();
    const result = await uploadMultipart(port, workspaceId, packageFile, 'Bench.Package.1.0.0.tar', SIZE_BYTES);
    const uploadSeconds = Number(process.hrtime.bigint() - start) / 1e9;
    clearInterval(sampler);
    const hwmKiB = statusKiB(pid, 'VmHWM');
    if (result.status !== 200) throw new Error(`upload failed: ${result.status} ${result.body}`);

    const listed = (await api(
      port,
      `/api/packagestore/packages?workspaceId=${workspaceId}&packageId=Bench.Package`,
    )) as {
      packages: Array<{ sha256: string; sizeBytes: number }>;
    };
    const stored = listed.packages[0];
    if (stored?.sha256 !== sha256 || stored.sizeBytes !== SIZE_BYTES)
      throw new Error('the stored package does not match the generated file');

    const mibPerSecond = (seconds: number) => SIZE_BYTES / MIB / seconds;
    const ratio = copySeconds / uploadSeconds;
    const growthMiB = (Math.max(peakKiB, hwmKiB) - baselineKiB) / 1024;
    const rows: Array<[string, string]> = [
      ['package size', `${SIZE_BYTES / MIB} MiB (tar, random content, sha256 verified after upload)`],
      ['local streamed copy', `${copySeconds.toFixed(2)} s  (${mibPerSecond(copySeconds).toFixed(0)} MiB/s)`],
      [
        'multipart upload',
        `${uploadSeconds.toFixed(2)} s  (${mibPerSecond(uploadSeconds).toFixed(0)} MiB/s, incl. hashing + archive check)`,
      ],
      [
        'ratio upload/copy',
        `${ratio.toFixed(2)}  (target ≥ ${TARGET_RATIO}) ${ratio >= TARGET_RATIO ? 'PASS' : 'FAIL'}`,
      ],
      ['server RSS baseline', `${(baselineKiB / 1024).toFixed(1)} MiB`],
      [
        'server RSS peak',
        `${(Math.max(peakKiB, hwmKiB) / 1024).toFixed(1)} MiB (sampled ${(peakKiB / 1024).toFixed(1)}, VmHWM ${(hwmKiB / 1024).toFixed(1)})`,
      ],
      [
        'RSS growth',
        `${growthMiB.toFixed(1)} MiB  (target ≤ ${TARGET_RSS_MIB}) ${growthMiB <= TARGET_RSS_MIB ? 'PASS' : 'FAIL'}`,
      ],
    ];
    for (const [name, value] of rows) console.log(`${name.padEnd(22)} ${value}`);
    process.exitCode = ratio >= TARGET_RATIO && growthMiB <= TARGET_RSS_MIB ? 0 : 1;
  } finally {
    if (server && server.exitCode === null) {
      server.kill('SIGTERM');
      await new Promise((resolve) => server?.once('exit', resolve));
    }
    await admin((c) => c.query(`drop database if exists "${database}" with (force)`));
    await fs.rm(work, { recursive: true, force: true });
  }
}

await main();
