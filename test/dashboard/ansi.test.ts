import { describe, expect, it } from 'vitest';
import { parseAnsi } from '../../dashboard/src/deployment/ansi.ts';

describe('parseAnsi', () => {
  it('turns SGR colour and bold codes into styled segments and drops other escapes', () => {
    expect(parseAnsi('plain')).toEqual([{ text: 'plain', className: '' }]);
    expect(parseAnsi('\u001b[1;31mfailed\u001b[0m: \u001b[92mok\u001b[39m\u001b[2K!')).toEqual([
      { text: 'failed', className: 'ansi-red ansi-bold' },
      { text: ': ', className: '' },
      { text: 'ok', className: 'ansi-bright-green' },
      { text: '!', className: '' },
    ]);
  });

  it('keeps markup as plain text (React renders it as text)', () => {
    expect(parseAnsi('\u001b[33m<script>x()</script>')).toEqual([
      { text: '<script>x()</script>', className: 'ansi-yellow' },
    ]);
  });
});
