import { describe, expect, it } from 'vitest';
import { LineSplitter } from '../../../agent/steps/line-splitter.ts';
import { createMasker } from '../../../agent/steps/mask.ts';

describe('createMasker', () => {
  it('masks the longest value first and escapes regex characters', () => {
    const mask = createMasker(['pass', 'password+1', '']);
    expect(mask('password+1 / pass / p.ss')).toBe('******** / ******** / p.ss');
  });

  it('leaves text alone when there are no sensitive values', () => {
    expect(createMasker([])('anything')).toBe('anything');
  });
});

describe('LineSplitter', () => {
  it('splits across chunks, strips CR and keeps multi-byte characters whole', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line), 5);
    const euro = Buffer.from('€');
    splitter.push(Buffer.concat([Buffer.from('a\r\nb'), euro.subarray(0, 1)]));
    splitter.push(Buffer.concat([euro.subarray(1), Buffer.from('\n123456789\nlast')]));
    splitter.end();
    expect(lines).toEqual(['a', 'b€', '12345', '6789', 'last']);
  });
});
