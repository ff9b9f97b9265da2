import { describe, expect, it } from 'vitest';
import { parseJson, quoteInt64Values } from '../../client/index.ts';

describe('parseJson', () => {
  it('reads int64 properties exactly, as decimal strings', () => {
    const parsed = parseJson<{ logs: Array<{ CreatedUtcTick: string; ErrorCount: number }> }>(
      '{"logs":[{"CreatedUtcTick":638590487604430631,"ErrorCount":1}]}',
    );
    expect(parsed.logs[0]).toEqual({ CreatedUtcTick: '638590487604430631', ErrorCount: 1 });
  });

  it('leaves strings that look like int64 members alone', () => {
    const text = '{"Data":"\\"CreatedUtcTick\\":123456789012345678,","LastLogDateTick":0}';
    expect(quoteInt64Values(text)).toBe('{"Data":"\\"CreatedUtcTick\\":123456789012345678,","LastLogDateTick":"0"}');
  });

  it('keeps other numbers as numbers, whitespace and nesting included', () => {
    const parsed = parseJson<Record<string, unknown>>(
      '{ "totalCount" : 12, "lastChangeTick" : 99 , "x": {"lastChangeTick":-3}}',
    );
    expect(parsed).toEqual({ totalCount: 12, lastChangeTick: '99', x: { lastChangeTick: '-3' } });
  });
});
