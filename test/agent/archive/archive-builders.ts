// Builds zip and tar archives byte by byte, so tests can craft the hostile entries that normal
// archivers refuse to write (`../evil`, absolute names, links).
import { crc32, deflateRawSync, gzipSync } from 'node:zlib';
import { Header, type HeaderData } from 'tar';

export interface ZipEntrySpec {
  name: string;
  data?: Buffer | string;
  /** Full st_mode incl. file type; 0o120777 makes a symlink (data = link target). */
  unixMode?: number;
  deflate?: boolean;
}

export function buildZip(entries: readonly ZipEntrySpec[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.from(entry.data ?? '');
    const body = entry.deflate ? deflateRawSync(data) : data;
    const method = entry.deflate ? 8 : 0;
    const crc = crc32(data);
    const mode = entry.unixMode ?? (entry.name.endsWith('/') ? 0o040755 : 0o100644);

    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x800, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);

    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, so the mode bits count
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((mode << 16) >>> 0, 38);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
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

export interface TarEntrySpec extends HeaderData {
  path: string;
  data?: string;
}

export function buildTar(entries: readonly TarEntrySpec[], gzip = false): Buffer {
  const blocks: Buffer[] = [];
  for (const { data, ...fields } of entries) {
    const body = Buffer.from(data ?? '');
    const header = new Header({ mode: 0o644, mtime: new Date(0), type: 'File', ...fields, size: body.length });
    const block = Buffer.alloc(512);
    header.encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  const tarBytes = Buffer.concat(blocks);
  return gzip ? gzipSync(tarBytes) : tarBytes;
}
