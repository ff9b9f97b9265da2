/**
 * deploy/grafana/gantry-dashboard.json charts only metrics a control plane really exposes: every
 * gantry_* name in its queries is read back from a live registry's exposition text.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../services/core/index.ts';

const root = path.resolve(import.meta.dirname, '../..');
const dashboard = JSON.parse(readFileSync(path.join(root, 'deploy/grafana/gantry-dashboard.json'), 'utf8'));

describe('Grafana dashboard', () => {
  it('queries only metrics that GET /metrics serves', async () => {
    const exposition = await createMetrics({ processMetrics: true }).registry.metrics();
    // Declared metrics (a labelled one has no sample before its first event); a histogram also serves _bucket, _count, _sum.
    const served = new Set(
      [...exposition.matchAll(/^# TYPE ([a-z0-9_:]+) (\w+)$/gm)].flatMap(([, name, kind]) =>
        kind === 'histogram' ? [name!, `${name}_bucket`, `${name}_count`, `${name}_sum`] : [name!],
      ),
    );
    const queries: string[] = dashboard.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr as string));
    const used = new Set(queries.flatMap((q) => [...q.matchAll(/gantry_[a-z0-9_]+/g)].map((m) => m[0])));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !served.has(name))).toEqual([]);
  });
});
