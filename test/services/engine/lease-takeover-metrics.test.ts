/**
 * gantry_lease_takeovers_total: a replica that claims a deployment whose lease another replica
 * left behind (it died mid-advance) counts one takeover; claiming a free or own lease counts none.
 * Real PostgreSQL; the engine is not started, so only the advances this test asks for run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createMetrics, type Metrics } from '../../../services/core/index.ts';
import { InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { deployment, environmentId, release, step } from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let engine: Engine;
let bus: InProcessBus;
let metrics: Metrics;
let staging: string;

async function takeovers(): Promise<number> {
  const metric = await metrics.registry.getSingleMetric('gantry_lease_takeovers_total')!.get();
  return metric.values[0]?.value ?? 0;
}

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  bus = new InProcessBus({ logger });
  metrics = createMetrics();
  engine = createEngine({
    store: t.deps.store,
    clock: t.deps.clock,
    bus,
    secrets: t.deps.secrets,
    logger,
    replicaId: 'replica-alive',
    metrics,
  });
  staging = await environmentId(t, 'Staging');
});

afterAll(async () => {
  await bus.close();
});

describe('lease takeovers', () => {
  it('counts a claim of a lease another replica left expired, and not a claim of a free one', async () => {
    const target = await release(t, { steps: [step('Only')] });
    const free = await deployment(t, target, staging);
    await engine.orchestrator.advance(free);
    expect(await takeovers()).toBe(0);

    const orphaned = await deployment(t, target, staging);
    await t
      .db('deployments')
      .where({ id: orphaned })
      .update({ lease_owner: 'replica-dead', lease_until: new Date(Date.now() - 60_000) });
    await engine.orchestrator.advance(orphaned);
    expect(await takeovers()).toBe(1);
    const row = await t.db('deployments').where({ id: orphaned }).first('lease_owner');
    expect(row.lease_owner).toBeNull(); // claimed by replica-alive, then released after its advance
  });

  it('does not take over a lease that has not expired', async () => {
    const target = await release(t, { steps: [step('Only')] });
    const held = await deployment(t, target, staging);
    await t
      .db('deployments')
      .where({ id: held })
      .update({ lease_owner: 'replica-busy', lease_until: new Date(Date.now() + 60_000) });
    expect(await engine.orchestrator.advance(held)).toBe('busy');
    expect(await takeovers()).toBe(1);
  });
});
