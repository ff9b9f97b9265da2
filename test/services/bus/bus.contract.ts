/**
 * The one contract every Bus adapter must honour, run by in-process-bus.test.ts and
 * nats-jetstream-bus.test.ts. A backend hands out "replicas": several Bus instances on one
 * isolated namespace (prefix), so competing consumers and crash redelivery are real.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Bus, EventMessage, WorkMessage, WorkTuning } from '../../../services/bus/index.ts';
import type { Logger } from '../../../services/core/index.ts';
import { EventSubject } from '../../../services/bus/index.ts';
import { waitFor } from '../../helpers/wait-for.ts';

export interface BusNamespace {
  /** Another replica on the same namespace. */
  connect(): Promise<Bus>;
  /** Removes the namespace's server-side state (after every replica was closed). */
  cleanup(): Promise<void>;
}

export interface BusBackend {
  name: string;
  open(options: WorkTuning & { logger: Logger }): Promise<BusNamespace>;
}

/** Short leases and retries so the suite runs in seconds; every assertion waits by polling. */
export const CONTRACT_TUNING = { ackWaitMs: 1_000, maxDeliver: 5, retryBaseMs: 50, retryMaxMs: 1_000 } as const;

export interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

export function capturingLogger(): { logger: Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

const advance = (deploymentId: string): WorkMessage => ({ v: 1, type: 'deployment.advance', deploymentId });
const idOf = (message: WorkMessage): string => message.deploymentId;
const changed = (deploymentId: string): EventMessage => ({
  v: 1,
  type: 'deployment.changed',
  deploymentId,
  status: 'Executing',
});

/** A promise the test opens later, to hold handlers in flight. */
function gate(): { wait: Promise<void>; open(): void } {
  let open = () => {};
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

export function describeBusContract(backend: BusBackend): void {
  describe(`Bus contract: ${backend.name}`, () => {
    let namespace: BusNamespace;
    let lines: LogLine[];
    const replicas: Bus[] = [];
    const gates: Array<{ open(): void }> = [];
    const queue = 'deployments';

    async function replica(): Promise<Bus> {
      const bus = await namespace.connect();
      replicas.push(bus);
      return bus;
    }

    function held(): { wait: Promise<void>; open(): void } {
      const g = gate();
      gates.push(g);
      return g;
    }

    beforeEach(async () => {
      const captured = capturingLogger();
      lines = captured.lines;
      namespace = await backend.open({ ...CONTRACT_TUNING, logger: captured.logger });
    });

    afterEach(async () => {
      for (const g of gates.splice(0)) g.open();
      await Promise.all(replicas.splice(0).map((bus) => bus.close()));
      await namespace.cleanup();
    });

    it('delivers a published message once with deliveryCount 1', async () => {
      const bus = await replica();
      const received: Array<{ message: WorkMessage; deliveryCount: number }> = [];
      await bus.consumeWork(queue, async (message, { deliveryCount }) => {
        received.push({ message, deliveryCount });
        return 'ack';
      });
      await bus.publishWork(queue, advance('d-1'));
      await bus.publishWork(queue, advance('d-2'));
      await waitFor(() => received.length === 2, { description: 'two deliveries' });
      expect(received).toEqual([
        { message: { v: 1, type: 'deployment.advance', deploymentId: 'd-1' }, deliveryCount: 1 },
        { message: { v: 1, type: 'deployment.advance', deploymentId: 'd-2' }, deliveryCount: 1 },
      ]);
    });

    it('delivers each message to exactly one of two competing consumers', async () => {
      const [a, b] = [await replica(), await replica()];
      const seen: string[] = [];
      const handler = async (message: WorkMessage) => {
        seen.push(idOf(message));
        return 'ack' as const;
      };
      await a.consumeWork(queue, handler, { maxInFlight: 2 });
      await b.consumeWork(queue, handler, { maxInFlight: 2 });
      const ids = Array.from({ length: 20 }, (_, i) => `d-${i}`);
      for (const id of ids) await a.publishWork(queue, advance(id));
      await waitFor(() => seen.length >= ids.length, { description: 'all 20 messages handled' });
      expect([...seen].sort()).toEqual([...ids].sort());
    });

    it('gives the next message to another consumer while the first is busy', async () => {
      const [a, b] = [await replica(), await replica()];
      const busy = held();
      const byA: string[] = [];
      const byB: string[] = [];
      await a.consumeWork(queue, async (m) => {
        byA.push(idOf(m));
        await busy.wait;
        return 'ack';
      });
      await a.publishWork(queue, advance('first'));
      await waitFor(() => byA.length === 1, { description: 'the first consumer holds a message' });
      await b.consumeWork(queue, async (m) => {
        byB.push(idOf(m));
        return 'ack';
      });
      await a.publishWork(queue, advance('second'));
      await waitFor(() => byB.length === 1, { description: 'the second consumer gets the next message' });
      expect({ byA, byB }).toEqual({ byA: ['first'], byB: ['second'] });
    });

    it('handles at most maxInFlight messages at once', async () => {
      const bus = await replica();
      const release = held();
      let active = 0;
      let peak = 0;
      let done = 0;
      await bus.consumeWork(
        queue,
        async () => {
          active += 1;
          peak = Math.max(peak, active);
          await release.wait;
          active -= 1;
          done += 1;
          return 'ack';
        },
        { maxInFlight: 3 },
      );
      for (let i = 0; i < 5; i++) await bus.publishWork(queue, advance(`d-${i}`));
      await waitFor(() => active === 3, { description: 'three handlers running' });
      release.open();
      await waitFor(() => done === 5, { description: 'all five handled' });
      expect(peak).toBe(3);
    });

    it('retries with backoff and an increasing deliveryCount when the handler throws', async () => {
      const bus = await replica();
      const deliveries: Array<{ deliveryCount: number; at: number }> = [];
      await bus.consumeWork(queue, async (_m, { deliveryCount }) => {
        deliveries.push({ deliveryCount, at: Date.now() });
        if (deliveryCount < 3) throw new Error('transient failure');
        return 'ack';
      });
      await bus.publishWork(queue, advance('d-1'));
      await waitFor(() => deliveries.length === 3, { description: 'three deliveries' });
      expect(deliveries.map((d) => d.deliveryCount)).toEqual([1, 2, 3]);
      const [first, second, third] = deliveries.map((d) => d.at) as [number, number, number];
      // retryBaseMs 50, doubling: ~50 ms, then ~100 ms (timers may fire a few ms early).
      expect(second - first).toBeGreaterThanOrEqual(40);
      expect(third - second).toBeGreaterThanOrEqual(90);
      expect(lines.filter((l) => l.msg === 'work handler failed')).toHaveLength(2);
    });

    it('redelivers after the delay when the handler asks for a retry', async () => {
      const bus = await replica();
      const at: number[] = [];
      await bus.consumeWork(queue, async (_m, { deliveryCount }) => {
        at.push(Date.now());
        return deliveryCount === 1 ? { retryInMs: 300 } : 'ack';
      });
      await bus.publishWork(queue, advance('d-1'));
      await waitFor(() => at.length === 2, { description: 'the retry' });
      expect((at[1] ?? 0) - (at[0] ?? 0)).toBeGreaterThanOrEqual(280);
    });

    it('drops and logs a message after maxDeliver failed deliveries', async () => {
      const bus = await replica();
      let deliveries = 0;
      await bus.consumeWork(queue, async () => {
        deliveries += 1;
        throw new Error('permanent failure');
      });
      await bus.publishWork(queue, advance('d-1'));
      await waitFor(() => lines.some((l) => l.msg === 'work message dropped after max deliveries'), {
        description: 'the drop to be logged',
      });
      expect(deliveries).toBe(CONTRACT_TUNING.maxDeliver);
    });

    it('ignores a publish whose id was already published', async () => {
      const bus = await replica();
      const seen: string[] = [];
      await bus.publishWork(queue, advance('original'), { id: 'task-1' });
      await bus.publishWork(queue, advance('duplicate'), { id: 'task-1' });
      await bus.publishWork(queue, advance('other'), { id: 'task-2' });
      await bus.consumeWork(queue, async (m) => {
        seen.push(idOf(m));
        return 'ack';
      });
      // One consumer with one slot sees the queue in order, so 'other' arrives after any duplicate.
      await waitFor(() => seen.includes('other'), { description: 'the last message' });
      expect(seen).toEqual(['original', 'other']);
    });

    it('redelivers to another replica when the consumer closes without acking', async () => {
      const [dying, survivor] = [await replica(), await replica()];
      const never = held();
      const byDying: number[] = [];
      await dying.consumeWork(queue, async (_m, { deliveryCount }) => {
        byDying.push(deliveryCount);
        await never.wait;
        return 'ack';
      });
      await dying.publishWork(queue, advance('d-1'));
      await waitFor(() => byDying.length === 1, { description: 'the first delivery' });
      await dying.close();
      const bySurvivor: Array<{ id: string; deliveryCount: number }> = [];
      await survivor.consumeWork(queue, async (m, { deliveryCount }) => {
        bySurvivor.push({ id: idOf(m), deliveryCount });
        return 'ack';
      });
      await waitFor(() => bySurvivor.length === 1, {
        timeoutMs: CONTRACT_TUNING.ackWaitMs * 5,
        description: 'the redelivery',
      });
      expect(bySurvivor).toEqual([{ id: 'd-1', deliveryCount: 2 }]);
      expect(byDying).toEqual([1]);
    });

    it('keeps the lease while the handler reports working()', async () => {
      const [a, b] = [await replica(), await replica()];
      const counts: number[] = [];
      let finished = false;
      await a.consumeWork(queue, async (_m, context) => {
        counts.push(context.deliveryCount);
        // Work for 2.5 × ackWait, renewing the lease every 0.3 × ackWait.
        for (let i = 0; i < 8; i++) {
          await new Promise((resolve) => setTimeout(resolve, CONTRACT_TUNING.ackWaitMs * 0.3));
          context.working();
        }
        finished = true;
        return 'ack';
      });
      const byB: string[] = [];
      await b.consumeWork(queue, async (m) => {
        byB.push(idOf(m));
        return 'ack';
      });
      await a.publishWork(queue, advance('long'));
      await waitFor(() => finished, { timeoutMs: 10_000, description: 'the long handler' });
      // A redelivery would have reached the idle consumer B, or A again, long before now.
      expect(counts).toEqual([1]);
      expect(byB).toEqual([]);
    });

    it('stops delivering work to a closed subscription', async () => {
      const bus = await replica();
      const closedOnes: string[] = [];
      const subscription = await bus.consumeWork(queue, async (m) => {
        closedOnes.push(idOf(m));
        return 'ack';
      });
      await subscription.close();
      await bus.publishWork(queue, advance('after-close'));
      const live: string[] = [];
      await bus.consumeWork(queue, async (m) => {
        live.push(idOf(m));
        return 'ack';
      });
      await waitFor(() => live.length === 1, {
        timeoutMs: CONTRACT_TUNING.ackWaitMs * 5,
        description: 'the live consumer',
      });
      expect(closedOnes).toEqual([]);
      expect(live).toEqual(['after-close']);
    });

    it('fans an event out to every subscriber on every replica', async () => {
      const [a, b] = [await replica(), await replica()];
      const got: string[] = [];
      await a.subscribeEvents('deployments.>', (m, subject) => void got.push(`a>:${subject}:${m.type}`));
      await a.subscribeEvents(EventSubject.deploymentChanged('d-1'), (_m, subject) => void got.push(`a=:${subject}`));
      await b.subscribeEvents('deployments.>', (_m, subject) => void got.push(`b>:${subject}`));
      await b.publishEvent(EventSubject.deploymentChanged('d-1'), changed('d-1'));
      await waitFor(() => got.length === 3, { description: 'three receivers' });
      expect(got.sort()).toEqual([
        'a=:deployments.d-1.changed',
        'a>:deployments.d-1.changed:deployment.changed',
        'b>:deployments.d-1.changed',
      ]);
    });

    it('matches * and trailing > like NATS subjects', async () => {
      const bus = await replica();
      const got = {
        all: [] as string[],
        cancels: [] as string[],
        deployments: [] as string[],
        dispatched: [] as string[],
      };
      await bus.subscribeEvents('>', (_m, s) => void got.all.push(s));
      await bus.subscribeEvents(EventSubject.allTaskCancels, (_m, s) => void got.cancels.push(s));
      await bus.subscribeEvents(EventSubject.allDeploymentEvents, (_m, s) => void got.deployments.push(s));
      await bus.subscribeEvents(EventSubject.allTasksDispatched, (_m, s) => void got.dispatched.push(s));
      await bus.publishEvent(EventSubject.taskCancel('t-1'), {
        v: 1,
        type: 'task.cancel',
        taskId: 't-1',
        deploymentId: 'd-1',
        machineId: 'm-1',
      });
      await bus.publishEvent(EventSubject.deploymentChanged('d-1'), changed('d-1'));
      await bus.publishEvent(EventSubject.deploymentLogs('d-1'), {
        v: 1,
        type: 'deployment.logs',
        deploymentId: 'd-1',
      });
      await bus.publishEvent(EventSubject.tasksDispatched('d-1'), {
        v: 1,
        type: 'tasks.dispatched',
        deploymentId: 'd-1',
        tasks: [{ taskId: 't-1', machineId: 'm-1' }],
      });
      await waitFor(
        () =>
          got.all.length === 4 &&
          got.cancels.length === 1 &&
          got.deployments.length === 3 &&
          got.dispatched.length === 1,
        {
          description: 'every matching subscriber',
        },
      );
      expect(got).toEqual({
        all: [
          'tasks.t-1.cancel',
          'deployments.d-1.changed',
          'deployments.d-1.logs',
          'deployments.d-1.tasks-dispatched',
        ],
        cancels: ['tasks.t-1.cancel'],
        deployments: ['deployments.d-1.changed', 'deployments.d-1.logs', 'deployments.d-1.tasks-dispatched'],
        dispatched: ['deployments.d-1.tasks-dispatched'],
      });
    });

    it('isolates namespaces: another prefix sees none of our events', async () => {
      const bus = await replica();
      const other = await backend.open({ ...CONTRACT_TUNING, logger: capturingLogger().logger });
      const stranger = await other.connect();
      try {
        const theirs: string[] = [];
        const ours: string[] = [];
        await stranger.subscribeEvents('>', (_m, s) => void theirs.push(s));
        await bus.subscribeEvents('>', (_m, s) => void ours.push(s));
        await bus.publishEvent(EventSubject.deploymentChanged('d-1'), changed('d-1'));
        await stranger.publishEvent(EventSubject.deploymentChanged('d-2'), changed('d-2'));
        await waitFor(() => ours.length === 1 && theirs.length === 1, { description: 'one event each' });
        expect({ ours, theirs }).toEqual({ ours: ['deployments.d-1.changed'], theirs: ['deployments.d-2.changed'] });
      } finally {
        await stranger.close();
        await other.cleanup();
      }
    });

    it('stops delivering events to a closed subscription', async () => {
      const bus = await replica();
      const closedOnes: string[] = [];
      const live: string[] = [];
      const subscription = await bus.subscribeEvents('deployments.>', (_m, s) => void closedOnes.push(s));
      await bus.subscribeEvents('deployments.>', (_m, s) => void live.push(s));
      await subscription.close();
      await bus.publishEvent(EventSubject.deploymentChanged('d-1'), changed('d-1'));
      await waitFor(() => live.length === 1, { description: 'the live subscriber' });
      expect(closedOnes).toEqual([]);
    });

    it('stops all delivery when the bus closes and refuses to publish afterwards', async () => {
      const [closing, other] = [await replica(), await replica()];
      const byClosing: string[] = [];
      await closing.consumeWork(queue, async (m) => {
        byClosing.push(idOf(m));
        return 'ack';
      });
      await closing.subscribeEvents('>', (_m, s) => void byClosing.push(s));
      await closing.close();
      await expect(closing.publishWork(queue, advance('late'))).rejects.toThrow('Bus is closed');

      const byOther: string[] = [];
      await other.subscribeEvents('>', (_m, s) => void byOther.push(s));
      await other.consumeWork(queue, async (m) => {
        byOther.push(idOf(m));
        return 'ack';
      });
      await other.publishEvent(EventSubject.deploymentChanged('d-1'), changed('d-1'));
      await other.publishWork(queue, advance('d-2'));
      await waitFor(() => byOther.length === 2, { description: 'the open replica gets both' });
      expect(byClosing).toEqual([]);
    });

    it('rejects queue names and subjects that are not name-safe', async () => {
      const bus = await replica();
      await expect(bus.publishWork('a.b', advance('d-1'))).rejects.toThrow("Invalid bus queue 'a.b'");
      await expect(bus.publishEvent('deployments.*', changed('d-1'))).rejects.toThrow('Invalid bus event subject');
      await expect(bus.subscribeEvents('a.>.b', () => {})).rejects.toThrow('Invalid bus event subject');
    });
  });
}
