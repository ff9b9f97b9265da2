/**
 * A new deployment's wake-up names what its validation reads by (release, workspace,
 * environment): those reads leave together with the advance's claim instead of after its answer.
 * The names are a hint: validation plans by the claimed row whatever they say.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../../../services/core/index.ts';
import { InProcessBus } from '../../../services/bus/index.ts';
import { createEngine, type Engine } from '../../../services/engine/engine.ts';
import type { Store } from '../../../services/store/index.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { deferred } from '../../helpers/deferred.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import { deployment, environmentId, fleetOf, release, step } from '../../helpers/engine-fixtures.ts';

let t: TestContext;
let engine: Engine;
let bus: InProcessBus;
let staging: string;
let production: string;
/** What the engine's store was asked about the deployment under test, in order. */
const calls: string[] = [];
let releaseAsked = deferred();
/**
 * The deployment under test and its release. An earlier test's deployment goes on meanwhile (its
 * machines never connect, so it fails and its end reads its release for automatic deployments):
 * its calls are not this test's.
 */
let current = { deploymentId: '', releaseId: '' };

beforeAll(async () => {
  t = await testApp();
  const { store } = t.deps;
  const wrapped: Store = {
    ...store,
    deployments: {
      ...store.deployments,
      claim: async (...args) => {
        if (args[0] !== current.deploymentId) return store.deployments.claim(...args);
        calls.push('claim');
        // Answered once the release is asked for (at most a second later): only reads sent with
        // the claim are asked for before its answer.
        await Promise.race([releaseAsked.promise, new Promise((resolve) => setTimeout(resolve, 1_000))]);
        const claimed = await store.deployments.claim(...args);
        calls.push('claim answered');
        return claimed;
      },
    },
    releases: {
      ...store.releases,
      get: (id) => {
        if (id !== current.releaseId) return store.releases.get(id);
        calls.push('release read');
        releaseAsked.resolve();
        return store.releases.get(id);
      },
    },
  };
  const logger = createLogger('silent');
  bus = new InProcessBus({ logger, retryBaseMs: 50 });
  engine = createEngine({ store: wrapped, clock: { now: () => new Date() }, bus, secrets: t.deps.secrets, logger });
  await engine.start();
  staging = await environmentId(t, 'Staging');
  production = await environmentId(t, 'Production');
  // Registered, never connected: planned as targets all the same.
  await fleetOf(t, 2, staging);
});

afterAll(async () => {
  await engine.stop();
  await bus.close();
});

/** A new deployment to Staging, woken as `wakeUp` says; the calls its first advance made. */
async function validated(wakeUp: (ids: { deploymentId: string; releaseId: string }) => Parameters<Engine['wake']>[0]) {
  const target = await release(t, { steps: [step('Everywhere')] });
  const deploymentId = await deployment(t, target, staging);
  calls.length = 0;
  releaseAsked = deferred();
  current = { deploymentId, releaseId: target.releaseId };
  await engine.wake(wakeUp({ deploymentId, releaseId: target.releaseId }));
  const planned = await waitFor(
    async () =>
      (await t.deps.store.deploymentLogs.read(deploymentId, null, 100, 1 << 20))
        .map((entry) => entry.data)
        .find((line) => line.startsWith('Planned')),
    { timeoutMs: 10_000, description: 'the validation' },
  );
  return { planned, calls: calls.slice(0, 3) };
}

it('reads the release with the claim when the wake-up names what validation reads', async () => {
  const { planned, calls: made } = await validated(({ deploymentId, releaseId }) => [
    { deploymentId, releaseId, workspaceId: t.mainWorkspaceId, environmentId: staging },
  ]);
  expect(made).toEqual(['release read', 'claim', 'claim answered']);
  expect(planned).toContain("on 2 machine(s) in 'Staging'");
});

it('reads the release after the claim when woken by ID alone', async () => {
  const { planned, calls: made } = await validated(({ deploymentId }) => [deploymentId]);
  expect(made).toEqual(['claim', 'claim answered', 'release read']);
  expect(planned).toContain("on 2 machine(s) in 'Staging'");
});

it('plans by the claimed deployment when the names are not its own', async () => {
  const { planned } = await validated(({ deploymentId, releaseId }) => [
    { deploymentId, releaseId, workspaceId: t.mainWorkspaceId, environmentId: production },
  ]);
  expect(planned).toContain("on 2 machine(s) in 'Staging'");
});
