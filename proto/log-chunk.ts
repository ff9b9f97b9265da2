/**
 * The varint fields of LogChunk (agent.proto): unsigned LEB128, 7 bits a byte, low bits first.
 * Both sides of the contract use these, so they live beside it.
 */

/** Encodes non-negative safe integers. */
export function encodeVarints(values: readonly number[]): Buffer {
  const bytes: number[] = [];
  for (let value of values) {
    while (value >= 0x80) {
      bytes.push((value % 0x80) | 0x80);
      value = Math.floor(value / 0x80);
    }
    bytes.push(value);
  }
  return Buffer.from(bytes);
}

/** Decodes every varint of `bytes`; throws on a truncated last one. */
export function decodeVarints(bytes: Uint8Array): number[] {
  const values: number[] = [];
  let value = 0;
  let scale = 1;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      values.push(value);
      value = 0;
      scale = 1;
    } else {
      scale *= 0x80;
      if (scale > 2 ** 49) throw new Error('varint too long');
    }
  }
  if (scale !== 1) throw new Error('truncated varint');
  return values;
}

/** LogLine.Stream values, as LogChunk.streams holds them (one byte per line). */
export const ChunkStream = { Stdout: 1, Stderr: 2, System: 3 } as const;
