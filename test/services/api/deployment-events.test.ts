/**
 * GET /api/deployment/events (issue #11): the SSE wire format the dashboard and the CLI code
 * against — status first, log batches with the last tick as id, status on change, end after the
 * last line — resumable with Last-Event-ID / after, woken through the bus (here the in-process
 * bus and the engine's change hub, as on a real replica), bounded pages, and the same scoping.
 * Also GET /api/deployment/log, the whole log as text (the dashboard's "Download raw log", which
 * no longer builds the file from the lines the page holds).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBroker, InProcessBus } from '../../../services/bus/index.ts';
import { buildApp } from '../../../services/api/app.ts';
import { createLogger } from '../../../services/core/index.ts';
import { createDeploymentChangeHub } from '../../../services/engine/deployment-changes.ts';
import { readServerSentEvents, parseJson, type ServerSentEvent } from '../../../client/index.ts';
import { authenticate, followDeployment } from '../../../services/domain/index.ts';
import { ADMIN, testApp, type TestContext } from '../../helpers/app.ts';
import { agentChunk, runningAgentTask } from '../../helpers/log-chunk.ts';
import { waitFor } from '../../helpers/wait-for.ts';

const logger = createLogger('silent');
const bus = new InProcessBus({ logger });
const hub = createDeploymentChangeHub(bus, logger);
let t: TestContext;
let projectId: string;
let version = 0;

beforeAll(async () => {
  await hub.start();
  t = await testApp({ deploymentChanges: hub });
  const lifecycleId = (await t.admin.get('/api/lifecycle', { workspaceId: t.mainWorkspaceId })).body.lifecycles[0]
    .lifecycleId;
  projectId = (await t.admin.post('/api/project', { workspaceId: t.mainWorkspaceId, name: 'Followed', lifecycleId }))
    .body.projectId;
});

afterAll(async () => {
  await hub.stop();
  await bus.close();
});

/** A Queued deployment to Staging (no engine runs here: the test writes its lines and status). */
async function deployment(): Promise<string> {
  const release = await t.admin.post('/api/release', { projectId, version: `1.0.${++version}` });
  const deployed = await t.admin.post('/api/release/deploy', {
    releaseId: release.body.releaseId,
    environments: ['Staging'],
  });
  return deployed.body.deploymentIds[0];
}

const append = (deploymentId: string, texts: string[]) =>
  t.deps.store.deploymentLogs.append(
    deploymentId,
    texts.map((data) => ({ level: 'Information' as const, data })),
    new Date(),
  );

const finish = (deploymentId: string) =>
  t.deps.store.deployments.update(deploymentId, { status: 'Completed', completedUtc: new Date() }, new Date());

function eventsOf(body: string): ServerSentEvent[] {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '' && !block.startsWith(':'))
    .map((block) => {
      const fields = Object.fromEntries(
        block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
      );
      return { id: fields.id ?? null, event: fields.event ?? 'message', data: fields.data ?? '' };
    });
}

describe('GET /api/deployment/events', () => {
  it('sends the status, every line in tick order with the last tick as id, then the end, and closes', async () => {
    const id = await deployment();
    const stored = await append(id, ['one', '<b>two</b>', 'three']);
    await finish(id);
    const response = await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}` });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = eventsOf(response.text);
    expect(events.map((e) => e.event)).toEqual(['deployment', 'status', 'logs', 'end']);
    // What a follower names the deployment by, before any line says where it deploys.
    expect(parseJson(events[0]!.data)).toEqual({
      deploymentId: id,
      projectId: expect.any(String),
      releaseId: expect.any(String),
      environmentId: expect.any(String),
      environmentName: 'Staging',
    });
    expect(parseJson<{ Status: string }>(events[1]!.data).Status).toBe('Completed');
    const lines = parseJson<Array<{ Data: string; CreatedUtcTick: string }>>(events[2]!.data);
    expect(lines.map((l) => l.Data)).toEqual(['one', '<b>two</b>', 'three']);
    expect(lines.map((l) => l.CreatedUtcTick)).toEqual(stored.map((l) => l.tick.toString()));
    expect(events[2]!.id).toBe(stored.at(-1)!.tick.toString());
    // Ticks are JSON integers on the wire, exactly as GET /api/deployment writes them.
    expect(events[2]!.data).toContain(`"CreatedUtcTick":${stored[0]!.tick}`);
    // The same objects as GET /api/deployment.
    const polled = await t.admin.get('/api/deployment', { deploymentId: id });
    expect(JSON.parse(events[3]!.data)).toEqual(polled.body.status);
    expect(parseJson<{ environmentName: string }>(events[0]!.data).environmentName).toBe(polled.body.environmentName);
  });

  it('resumes strictly after Last-Event-ID (or after=) and still ends', async () => {
    const id = await deployment();
    const stored = await append(id, ['a', 'b', 'c', 'd']);
    await finish(id);
    const resumed = await t.admin.raw({
      method: 'GET',
      path: `/api/deployment/events?deploymentId=${id}`,
      headers: { 'last-event-id': stored[1]!.tick.toString() },
    });
    const byHeader = eventsOf(resumed.text);
    expect(byHeader.map((e) => e.event)).toEqual(['deployment', 'status', 'logs', 'end']);
    expect(parseJson<Array<{ Data: string }>>(byHeader[2]!.data).map((l) => l.Data)).toEqual(['c', 'd']);
    const byQuery = eventsOf(
      (await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&after=${stored[3]!.tick}` }))
        .text,
    );
    expect(byQuery.map((e) => e.event)).toEqual(['deployment', 'status', 'end']);
    const bad = await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&after=12x` });
    expect(bad.status).toBe(400);
  });

  it('pages long logs: no event carries more than 1 000 lines', async () => {
    const id = await deployment();
    await append(
      id,
      Array.from({ length: 2_500 }, (_, i) => `line ${i}`),
    );
    await finish(id);
    const events = eventsOf(
      (await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}` })).text,
    );
    const batches = events.filter((e) => e.event === 'logs').map((e) => parseJson<unknown[]>(e.data).length);
    expect(batches).toEqual([1_000, 1_000, 500]);
  });

  it('starts with the last lines when asked for a tail, saying how many come before; a resumed stream ignores it', async () => {
    const id = await deployment();
    const stored = await append(
      id,
      Array.from({ length: 10 }, (_, i) => `line ${i}`),
    );
    await finish(id);
    const tailed = eventsOf(
      (await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&tail=3` })).text,
    );
    expect(tailed.map((e) => e.event)).toEqual(['tail', 'deployment', 'status', 'logs', 'end']);
    expect(parseJson(tailed[0]!.data)).toEqual({ earlierLines: 7 });
    expect(parseJson<Array<{ Data: string }>>(tailed[3]!.data).map((l) => l.Data)).toEqual([
      'line 7',
      'line 8',
      'line 9',
    ]);
    // More than the log holds: every line, none before them.
    const whole = eventsOf(
      (await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&tail=50` })).text,
    );
    expect(parseJson(whole[0]!.data)).toEqual({ earlierLines: 0 });
    expect(parseJson<unknown[]>(whole[3]!.data)).toHaveLength(10);
    // EventSource reconnecting sends Last-Event-ID with the same URL: it resumes, not tails again.
    const resumed = eventsOf(
      (
        await t.admin.raw({
          method: 'GET',
          path: `/api/deployment/events?deploymentId=${id}&tail=3`,
          headers: { 'last-event-id': stored[4]!.tick.toString() },
        })
      ).text,
    );
    expect(resumed.map((e) => e.event)).toEqual(['deployment', 'status', 'logs', 'end']);
    expect(parseJson<unknown[]>(resumed[2]!.data)).toHaveLength(5);
    for (const tail of ['0', '-1', '1.5', 'x', '1000001']) {
      const bad = await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&tail=${tail}` });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ errorcode: expect.any(Number), validationErrors: [{ property: 'tail' }] });
    }
  });

  it('sends only the lines of a level and above with `level`, the tail counting those, and reads on past a page of lines below it', async () => {
    const id = await deployment();
    const at = (level: 'Information' | 'Warning' | 'Error' | 'Critical', data: string) => ({ level, data });
    await t.deps.store.deploymentLogs.append(
      id,
      [at('Information', 'info 1'), at('Warning', 'warning 1'), at('Error', 'error 1'), at('Information', 'info 2')],
      new Date(),
    );
    // An agent's lines: a warning, then an Information line longer than a page's bytes; then a later warning.
    const taskId = await runningAgentTask(t.deps.store, id);
    const chunk = (firstSeq: number, lines: string[], levels: number[]) =>
      agentChunk(taskId, firstSeq, lines, { levels: Buffer.from(levels) });
    await t.deps.store.deploymentLogs.record(
      id,
      [{ chunks: [chunk(1, ['printed warning', 'x'.repeat(1_100_000)], [1, 0]), chunk(3, ['late warning'], [1])] }],
      new Date(),
    );
    await t.deps.store.deploymentLogs.append(id, [at('Critical', 'critical 1')], new Date());
    await finish(id);
    const stream = async (query: string, headers: Record<string, string> = {}) =>
      eventsOf(
        (await t.admin.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}&${query}`, headers }))
          .text,
      );
    const linesOf = (events: ServerSentEvent[]) =>
      events
        .filter((e) => e.event === 'logs')
        .flatMap((e) => parseJson<Array<{ Data: string }>>(e.data).map((l) => l.Data));
    const warnings = await stream('level=Warning');
    expect(linesOf(warnings)).toEqual(['warning 1', 'error 1', 'printed warning', 'late warning', 'critical 1']);
    expect(warnings.at(-1)!.event).toBe('end');
    expect(linesOf(await stream('level=Error'))).toEqual(['error 1', 'critical 1']);
    const tailed = await stream('level=Warning&tail=2');
    expect(parseJson(tailed[0]!.data)).toEqual({ earlierLines: 3 });
    expect(linesOf(tailed)).toEqual(['late warning', 'critical 1']);
    // Resumed after the agent's warning: the rest of its chunk is one line of Information over a
    // page's bytes, so the first page read holds no line at Warning; the stream reads on.
    const printed = (await t.deps.store.deploymentLogs.read(id, null, 100, 1024 ** 3)).find(
      (e) => e.data === 'printed warning',
    )!;
    const resumed = await stream('level=Warning', { 'last-event-id': printed.tick.toString() });
    expect(linesOf(resumed)).toEqual(['late warning', 'critical 1']);
    expect(resumed.at(-1)!.event).toBe('end');
    for (const level of ['Information', 'warning', 'Critical', '']) {
      const bad = await t.admin.raw({
        method: 'GET',
        path: `/api/deployment/events?deploymentId=${id}&level=${level}`,
      });
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ errorcode: expect.any(Number), validationErrors: [{ property: 'level' }] });
    }
  });

  it('pushes a line committed later as soon as the bus wakes it, then a status change, then the end', async () => {
    const id = await deployment();
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (t.app.server.address() as AddressInfo).port;
    expect(address).toContain(String(port));
    const response = await fetch(`http://127.0.0.1:${port}/api/deployment/events?deploymentId=${id}`, {
      headers: { authorization: `Basic ${Buffer.from('test-admin:test-admin-key-0123456789').toString('base64')}` },
    });
    const received: ServerSentEvent[] = [];
    const reading = (async () => {
      for await (const event of readServerSentEvents(response.body!)) received.push(event);
    })();
    await waitFor(() => received.length === 2, { description: 'the deployment and its first status' });
    expect(received[0]!.event).toBe('deployment');
    expect(parseJson<{ Status: string }>(received[1]!.data).Status).toBe('Queued');
    const started = Date.now();
    await append(id, ['live line']);
    hub.notifyLogs(id);
    await waitFor(() => received.some((e) => e.event === 'logs' && e.data.includes('live line')), {
      timeoutMs: 1_500,
      description: 'the live line',
    });
    // Well under the 2 s re-read: the bus woke the stream.
    expect(Date.now() - started).toBeLessThan(1_000);
    await t.deps.store.deployments.update(id, { status: 'Running', startedUtc: new Date() }, new Date());
    await bus.publishEvent(`deployments.${id}.changed`, {
      v: 1,
      type: 'deployment.changed',
      deploymentId: id,
      status: 'Running',
    });
    await waitFor(() => received.some((e) => e.event === 'status' && e.data.includes('"Running"')), {
      timeoutMs: 1_500,
      description: 'the Running status',
    });
    await append(id, ['last line']);
    await finish(id);
    hub.notifyLogs(id);
    await reading;
    const kinds = received.map((e) => e.event);
    expect(kinds.at(-1)).toBe('end');
    expect(
      received
        .filter((e) => e.event === 'logs')
        .flatMap((e) => parseJson<Array<{ Data: string }>>(e.data).map((l) => l.Data)),
    ).toEqual(['live line', 'last line']);
    await new Promise((resolve) => t.app.server.close(resolve));
  });

  it("refuses another workspace's deployment as unknown before streaming anything", async () => {
    const id = await deployment();
    const other = await t.workspace();
    const stranger = await t.account([{ role: 'View' }], other);
    const refused = await stranger.raw({ method: 'GET', path: `/api/deployment/events?deploymentId=${id}` });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ errorcode: 3001 });
    expect(refused.headers['content-type']).toContain('application/json');
  });

  it('reads a page of lines only when the previous one was taken, and keeps a quiet stream alive', async () => {
    const id = await deployment();
    await append(
      id,
      Array.from({ length: 3_000 }, (_, i) => `line ${i}`),
    );
    const principal = await authenticate(t.deps, ADMIN.id, ADMIN.key);
    let reads = 0;
    const store = {
      ...t.deps.store,
      deploymentLogs: {
        ...t.deps.store.deploymentLogs,
        readPage: (...args: Parameters<typeof t.deps.store.deploymentLogs.readPage>) => {
          reads++;
          return t.deps.store.deploymentLogs.readPage(...args);
        },
        readWithDeployment: (...args: Parameters<typeof t.deps.store.deploymentLogs.readWithDeployment>) => {
          reads++;
          return t.deps.store.deploymentLogs.readWithDeployment(...args);
        },
      },
    };
    const abort = new AbortController();
    const events = await followDeployment({ ...t.deps, store }, principal, { deploymentId: id }, abort.signal, {
      pollMs: 20,
      keepaliveMs: 150,
      pageSize: 1_000,
    });
    expect((await events.next()).value).toMatchObject({ type: 'status' });
    expect((await events.next()).value).toMatchObject({ type: 'logs' });
    // A consumer that stops taking (a socket that is not drained) stops the reads.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reads).toBe(1);
    expect((await events.next()).value).toMatchObject({ type: 'logs' });
    expect((await events.next()).value).toMatchObject({ type: 'logs' });
    const started = Date.now();
    expect((await events.next()).value).toEqual({ type: 'keepalive' });
    expect(Date.now() - started).toBeLessThan(1_000);
    abort.abort();
    expect((await events.next()).done).toBe(true);
  });

  /** A follower with its own wake-ups (`notify`) and a re-read timer too slow to hide a lost one. */
  async function followed(id: string, store = t.deps.store) {
    const listeners = new Set<() => void>();
    const deploymentChanges = {
      subscribe: (_id: string, onChange: () => void) => (
        listeners.add(onChange),
        () => void listeners.delete(onChange)
      ),
    };
    const principal = await authenticate(t.deps, ADMIN.id, ADMIN.key);
    const abort = new AbortController();
    const events = await followDeployment(
      { ...t.deps, store, deploymentChanges },
      principal,
      { deploymentId: id },
      abort.signal,
      {
        pollMs: 60_000,
        keepaliveMs: 60_000,
      },
    );
    const notify = () => listeners.forEach((onChange) => onChange());
    /** The next event, or 'stalled' when none comes within 5 s (the timer would take a minute). */
    const next = () =>
      Promise.race([
        events.next().then((r) => r.value),
        new Promise<'stalled'>((resolve) => setTimeout(() => resolve('stalled'), 5_000).unref()),
      ]);
    return { notify, next };
  }

  it('misses no change committed while it reads: the wake-up that came during the read counts', async () => {
    const id = await deployment();
    let racing = false;
    let f: Awaited<ReturnType<typeof followed>> | null = null;
    const store = {
      ...t.deps.store,
      deploymentLogs: {
        ...t.deps.store.deploymentLogs,
        readWithDeployment: async (...args: Parameters<typeof t.deps.store.deploymentLogs.readWithDeployment>) => {
          const read = await t.deps.store.deploymentLogs.readWithDeployment(...args);
          if (racing) {
            // The deployment ends after this read's snapshot, and its wake-up arrives before the read returns.
            racing = false;
            await append(id, ['the last line']);
            await finish(id);
            f!.notify();
          }
          return read;
        },
      },
    };
    f = await followed(id, store);
    expect(await f.next()).toMatchObject({ type: 'status', deployment: { status: 'Queued' } });
    racing = true;
    f.notify();
    // The read that raced saw nothing new; the wake-up it overlapped makes the follower read again.
    expect(await f.next()).toMatchObject({ type: 'status', deployment: { status: 'Completed' } });
    expect(await f.next()).toMatchObject({ type: 'logs', lines: [{ data: 'the last line' }] });
    expect(await f.next()).toMatchObject({ type: 'end' });
  });

  it('misses no change committed between the authorizing read and the first event', async () => {
    const id = await deployment();
    // followDeployment read the deployment Queued to authorize; it completes before the stream
    // subscribes (its wake-up had no one to reach).
    const f = await followed(id);
    await finish(id);
    expect(await f.next()).toMatchObject({ type: 'status', deployment: { status: 'Completed' } });
    expect(await f.next()).toMatchObject({ type: 'end' });
  });

  it('lets a follower reconnect to another replica with Last-Event-ID and miss nothing, woken by the first replica', async () => {
    // Two replicas: one database, one broker, each with its own bus, change hub and HTTP app.
    const broker = new InProcessBroker();
    const [busA, busB] = [new InProcessBus({ logger, broker }), new InProcessBus({ logger, broker })];
    const [hubA, hubB] = [createDeploymentChangeHub(busA, logger), createDeploymentChangeHub(busB, logger)];
    await hubA.start();
    await hubB.start();
    const replicaB = await buildApp({ ...t.deps, packages: t.packages, deploymentChanges: hubB }, { logger: false });
    try {
      const id = await deployment();
      const stored = await append(id, ['before the drop 1', 'before the drop 2']);
      // On replica A (the test app) the client saw the first line only, then lost its connection.
      await replicaB.listen({ port: 0, host: '127.0.0.1' });
      const port = (replicaB.server.address() as AddressInfo).port;
      const response = await fetch(`http://127.0.0.1:${port}/api/deployment/events?deploymentId=${id}`, {
        headers: {
          authorization: `Basic ${Buffer.from(`${ADMIN.id}:${ADMIN.key}`).toString('base64')}`,
          'last-event-id': stored[0]!.tick.toString(),
        },
      });
      const received: ServerSentEvent[] = [];
      const reading = (async () => {
        for await (const event of readServerSentEvents(response.body!)) received.push(event);
      })();
      await waitFor(() => received.some((e) => e.event === 'logs'), { description: 'the missed line' });
      // A line written through replica A's engine wakes the follower on replica B over the bus.
      const started = Date.now();
      await append(id, ['after the reconnect']);
      hubA.notifyLogs(id);
      await waitFor(() => received.some((e) => e.data.includes('after the reconnect')), {
        timeoutMs: 1_500,
        description: 'the line written on replica A',
      });
      expect(Date.now() - started).toBeLessThan(1_000);
      await finish(id);
      hubA.notifyLogs(id);
      await reading;
      const lines = received
        .filter((e) => e.event === 'logs')
        .flatMap((e) => parseJson<Array<{ Data: string }>>(e.data).map((l) => l.Data));
      expect(lines).toEqual(['before the drop 2', 'after the reconnect']);
      expect(received.at(-1)!.event).toBe('end');
    } finally {
      await replicaB.close();
      await hubA.stop();
      await hubB.stop();
      await busA.close();
      await busB.close();
    }
  });
});

const COLOURED = '\u001b[33mcareful\u001b[0m <b>not html</b>';

describe('GET /api/deployment/log', () => {
  it('sends every line as text, in tick order across pages, time and level first, escape sequences removed', async () => {
    const id = await deployment();
    await t.deps.store.deploymentLogs.append(
      id,
      [
        { level: 'Warning', data: COLOURED },
        { level: 'Error', data: 'broken' },
      ],
      new Date(),
    );
    // More than one page of 5 000.
    await t.deps.store.deploymentLogs.append(
      id,
      Array.from({ length: 12_000 }, (_, i) => ({ level: 'Information' as const, data: `bulk ${i}` })),
      new Date(),
    );
    const stored = await t.deps.store.deploymentLogs.read(id, null, 100_000, 1024 ** 3);
    const response = await t.admin.raw({ method: 'GET', path: `/api/deployment/log?deploymentId=${id}` });
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(response.headers['content-disposition']).toBe(`attachment; filename="deployment-${id}.log"`);
    const lines = response.text.split('\n');
    expect(lines.pop()).toBe('');
    expect(lines).toHaveLength(stored.length);
    expect(lines).toEqual(
      stored.map(
        (e) =>
          `${e.createdUtc.toISOString()} ${e.level.padEnd(11)} ${e.data === COLOURED ? 'careful <b>not html</b>' : e.data}`,
      ),
    );
    expect(lines).toContain(`${stored.find((e) => e.data === 'broken')!.createdUtc.toISOString()} Error       broken`);
    expect(lines.find((l) => l.includes('careful'))).toMatch(/ Warning {5}careful <b>not html<\/b>$/);
    expect(lines.at(-1)).toMatch(/ Information bulk 11999$/);
  });

  it('sends an empty file for a log without lines', async () => {
    const id = await deployment();
    const response = await t.admin.raw({ method: 'GET', path: `/api/deployment/log?deploymentId=${id}` });
    expect(response.status).toBe(200);
    expect(response.text).toBe('');
  });

  it("answers 401 without credentials and refuses another workspace's deployment as unknown", async () => {
    const id = await deployment();
    const anonymous = await t.anonymous.raw({ method: 'GET', path: `/api/deployment/log?deploymentId=${id}` });
    expect(anonymous.status).toBe(401);
    const stranger = await t.account([{ role: 'View' }], await t.workspace());
    const refused = await stranger.raw({ method: 'GET', path: `/api/deployment/log?deploymentId=${id}` });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ errorcode: 3001 });
    const missing = await t.admin.raw({ method: 'GET', path: '/api/deployment/log' });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ validationErrors: [{ property: 'deploymentId' }] });
  });
});

describe('the change hub for every deployment (the read caches listen to it)', () => {
  it("tells subscribeAll's listeners of each deployment's change on another replica, until they unsubscribe", async () => {
    const broker = new InProcessBroker();
    const [busA, busB] = [new InProcessBus({ logger, broker }), new InProcessBus({ logger, broker })];
    const [hubA, hubB] = [createDeploymentChangeHub(busA, logger), createDeploymentChangeHub(busB, logger)];
    await hubA.start();
    await hubB.start();
    try {
      const heard: string[] = [];
      const unsubscribe = hubB.subscribeAll((deploymentId) => heard.push(deploymentId));
      hubA.notifyLogs('d-one');
      hubA.notifyLogs('d-two');
      await waitFor(() => heard.includes('d-one') && heard.includes('d-two'), { description: 'both changes' });
      unsubscribe();
      hubA.notifyLogs('d-three');
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(heard).not.toContain('d-three');
    } finally {
      await Promise.all([hubA.stop(), hubB.stop()]);
      await Promise.all([busA.close(), busB.close()]);
    }
  });
});
