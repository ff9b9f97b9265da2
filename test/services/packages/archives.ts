/** Small real archives for package tests, built in memory (zip: stored entries) or with node-tar. */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crc32 } from 'node:zlib';
import * as tar from 'tar';

export interface Entry {
  name: string;
  data: Buffer | string;
}

/** A valid zip (also a valid nupkg container) with stored, uncompressed entries. */
export function makeZip(entries: Entry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, data);
    centrals.push(central, name);
    offset += 30 + name.length + data.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A valid tar, gzipped when asked. */
export async function makeTar(entries: Entry[], gzip: boolean): Promise<Buffer> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gantry-tar-'));
  try {
    for (const entry of entries) {
      await fs.mkdir(path.dirname(path.join(dir, 'src', entry.name)), { recursive: true });
      await fs.writeFile(path.join(dir, 'src', entry.name), entry.data);
    }
    const file = path.join(dir, 'out.tar');
    await tar.c(
      { gzip, cwd: path.join(dir, 'src'), file, portable: true },
      entries.map((e) => e.name),
    );
    return await fs.readFile(file);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** A valid archive of the type named by the file's extension. */
export async function archiveFor(
  fileName: string,
  entries: Entry[] = [{ name: 'app/run.sh', data: 'echo hello\n' }],
): Promise<Buffer> {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.tar.gz')) return makeTar(entries, true);
  if (lower.endsWith('.tar')) return makeTar(entries, false);
  return makeZip(lower.endsWith('.nupkg') ? [{ name: 'Package.nuspec', data: '<package/>' }, ...entries] : entries);
}

export interface FormPart {
  name: string;
  value?: string;
  file?: { fileName: string; data: Buffer; contentType?: string };
}

/** A multipart/form-data body with the parts in the order given. */
export function multipartBody(parts: FormPart[]): { payload: Buffer; headers: Record<string, string> } {
  const boundary = `----gantry${Math.random().toString(16).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(`--${boundary}\r\n`));
    if (part.file) {
      chunks.push(
        Buffer.from(
          `Content-Disposition: form-data; name="${part.name}"; filename="${part.file.fileName}"\r\nContent-Type: ${part.file.contentType ?? 'application/octet-stream'}\r\n\r\n`,
        ),
        part.file.data,
        Buffer.from('\r\n'),
      );
    } else {
      chunks.push(Buffer.from(`Content-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value ?? ''}\r\n`));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}
