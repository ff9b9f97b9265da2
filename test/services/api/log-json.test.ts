import { parseJson } from '../../../client/json.ts';
import { describe, expect, it } from 'vitest';
import { logItemsJson as logItemsPieces } from '../../../services/api/routes/deployments/log-json.ts';

const logItemsJson = (entries: readonly LogEntry[]) => Buffer.concat(logItemsPieces(entries)).toString();
import { LogSchema } from '../../../services/api/routes/deployments/schemas.ts';
import type { LogEntry } from '../../../services/store/index.ts';

const created = new Date('2026-11-23T10:11:12.345Z');
const entry = (over: Partial<LogEntry>): LogEntry => ({
  id: 'dep-1.1',
  deploymentId: 'dep-1',
  tick: 639_000_000_000_000_001n,
  createdUtc: created,
  level: 'Information',
  data: 'line',
  exceptionData: null,
  parentLogId: null,
  stepId: null,
  taskId: null,
  ...over,
});

describe('log items written by hand', () => {
  it('is empty brackets for no entries', () => {
    expect(logItemsJson([])).toBe('[]');
  });

  it('cuts a long page into pieces of whole bytes (a character never straddles two)', () => {
    const entries = Array.from({ length: 400 }, (_, i) => entry({ id: `x${i}`, data: `${i} ${'é😀'.repeat(100)}` }));
    const pieces = logItemsPieces(entries);
    expect(pieces.length).toBeGreaterThan(3);
    const items = JSON.parse(Buffer.concat(pieces).toString()) as Array<{ Data: string }>;
    expect(items.map((item) => item.Data)).toEqual(entries.map((e) => e.data));
  });

  it('writes every LogSchema property in order, with the values of the entry', () => {
    const entries: LogEntry[] = [
      entry({}),
      entry({ id: 'a', level: 'Error', data: 'quote " backslash \\ newline \n tab \t', parentLogId: 'p', stepId: 's' }),
      entry({ id: 'b', level: 'Critical', exceptionData: 'stack\ntrace', parentLogId: 'p', stepId: 's' }),
      entry({ id: 'c', level: 'Warning', data: 'ünïcödé \u2028 😀 \ud800', parentLogId: 'q' }),
      entry({ id: 'd', level: 'Debug', deploymentId: 'dep-2', createdUtc: new Date(created.getTime() + 1) }),
      entry({ id: 'e', tick: 2n ** 63n - 1n }),
    ];
    const text = logItemsJson(entries);
    const items = parseJson<Record<string, unknown>[]>(text);
    expect(items).toHaveLength(entries.length);
    items.forEach((item, i) => {
      const source = entries[i]!;
      expect(Object.keys(item)).toEqual(Object.keys(LogSchema.properties));
      const errors = source.level === 'Error' || source.level === 'Critical' ? 1 : 0;
      expect(item).toEqual({
        CreatedLocalTime: null,
        CreatedUtc: source.createdUtc.toISOString(),
        CreatedUtcTick: source.tick.toString(), // parseJson keeps int64 exact as text
        Data: source.data,
        DeploymentId: source.deploymentId,
        DeploymentMonitorId: null,
        ErrorCount: errors,
        WarningCount: source.level === 'Warning' ? 1 : 0,
        ExceptionData: source.exceptionData,
        Id: source.id,
        LogLevel: source.level,
        ParentLogId: source.parentLogId,
        StepId: source.stepId,
      });
    });
    // Ticks beyond 2^53 are written as exact integers, not rounded.
    expect(text).toContain(`"CreatedUtcTick":${2n ** 63n - 1n}`);
  });
});
