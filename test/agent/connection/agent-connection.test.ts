import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentConnection } from '../../../agent/connection/agent-connection.ts';
import { DEFAULT_BACKOFF, type BackoffOptions } from '../../../agent/connection/backoff.ts';
import { identityFile } from '../../../agent/connection/identity.ts';
import { ensureIdentity, RegistrationError } from '../../../agent/connection/register.ts';
import { PackageCache } from '../../../agent/steps/package-cache.ts';
import { TaskJournal } from '../../../agent/steps/task-journal.ts';
import { TaskManager } from '../../../agent/steps/task-manager.ts';
import { buildZip } from '../archive/archive-builders.ts';
import { runTask, waitFor } from '../steps/task-harness.ts';
import { FakeControlPlane } from './fake-control-plane.ts';

const logger = pino({ level: 'silent' });
const info = { agentVersion: 'test', os: 'linux x64', hostname: 'test-host' };
const backoff = { initialMs: 50, maxMs: 300 };
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startPlane(port = 0, previous?: FakeControlPlane): Promise<FakeControlPlane> {
  const plane = await FakeControlPlane.start(port, previous);
  cleanups.push(() => plane.stop());
  return plane;
}

interface TestAgent {
  home: string;
  manager: TaskManager;
  connection: AgentConnection;
  journal: TaskJournal;
}

/** Wires an agent like agent/main.ts does, in-process, with fast reconnects. */
async function startAgent(
  servers: string[],
  token: string | undefined = 'good-token',
  home?: string,
  reconnect: BackoffOptions = backoff,
  agentLogger: pino.Logger = logger,
): Promise<TestAgent> {
  const agentHome = home ?? mkdtempSync(path.join(tmpdir(), 'gantry-agent-conn-'));
  if (!home) cleanups.push(() => rmSync(agentHome, { recursive: true, force: true }));
  const credentials = grpc.credentials.createInsecure();
  const identity = await ensureIdentity({
    homeDir: agentHome,
    registrationToken: token,
    servers,
    credentials,
    info,
    logger,
    backoff,
    signal: new AbortController().signal,
    connectTimeoutMs: 1000,
  });
  const journal = new TaskJournal(path.join(agentHome, 'tasks'));
  let connection: AgentConnection | undefined;
  const manager = new TaskManager({
    journal,
    packages: new PackageCache(path.join(agentHome, 'packages'), {
      download: (id, version, signal) => connection!.downloadPackage(id, version, signal),
    }),
    workRoot: path.join(agentHome, 'work'),
    scriptsRoot: path.join(agentHome, 'scripts'),
    baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    logger,
    flushIntervalMs: 20,
  });
  manager.recover();
  connection = new AgentConnection({
    servers,
    credentials,
    identity,
    info,
    handler: manager,
    logger: agentLogger,
    backoff: reconnect,
    connectTimeoutMs: 1000,
  });
  manager.attach(connection);
  connection.start();
  const agent = { home: agentHome, manager, connection, journal };
  cleanups.push(async () => {
    await manager.shutdown(200);
    await connection.stop();
  });
  return agent;
}

function heartbeatsSinceHello(plane: FakeControlPlane): number {
  let count = 0;
  for (const message of plane.received) count = message.hello ? 0 : count + (message.heartbeat ? 1 : 0);
  return count;
}

function linesOf(plane: FakeControlPlane, taskId: string): string[] {
  return plane.received.flatMap((m) =>
    m.logBatch?.taskId === taskId ? m.logBatch.lines.map((l) => `${l.seq}:${l.text}`) : [],
  );
}

function resultsOf(plane: FakeControlPlane, taskId: string) {
  return plane.received
    .flatMap((m) => [m.taskResult, ...(m.hello?.unacknowledgedResults ?? [])])
    .filter((r) => r?.taskId === taskId);
}

describe('agent connection', () => {
  it('registers once, saves its identity with mode 0600, connects and runs a task end to end', async () => {
    const plane = await startPlane();
    const agent = await startAgent([plane.address]);
    const saved = JSON.parse(readFileSync(identityFile(agent.home), 'utf8')) as {
      machineId: string;
      credential: string;
    };
    expect(saved).toEqual({ machineId: 'machine-1', credential: 'credential-machine-1' });
    expect(statSync(identityFile(agent.home)).mode & 0o777).toBe(0o600);

    const hello = await waitFor(() => plane.received.find((m) => m.hello)?.hello);
    expect(hello).toMatchObject({
      agentVersion: 'test',
      hostname: 'test-host',
      runningTaskIds: [],
      unacknowledgedResults: [],
    });

    const task = runTask({ script: 'echo "hi $Name"', env: { Name: 'there' } });
    plane.send({ runTask: task });
    const result = await waitFor(() => resultsOf(plane, task.taskId)[0]);
    expect(result).toMatchObject({ outcome: 'SUCCEEDED', exitCode: 0, lastLogSeq: '1' });
    expect(linesOf(plane, task.taskId)).toEqual(['1:hi there']);
    expect(plane.received.some((m) => m.taskAccepted?.taskId === task.taskId)).toBe(true);
    // AckResult + AckLogs arrived: the agent keeps only a tombstone.
    await waitFor(() => agent.journal.get(task.taskId)?.forgotten);

    // A second start on the same home reuses the identity: the one-time token is not needed.
    const again = await ensureIdentity({
      homeDir: agent.home,
      registrationToken: undefined,
      servers: [plane.address],
      credentials: grpc.credentials.createInsecure(),
      info,
      logger,
      backoff,
      signal: new AbortController().signal,
    });
    expect(again.machineId).toBe('machine-1');
    expect(plane.registrations).toBe(1);
  });

  it('sends heartbeats at the interval the Welcome asks for', async () => {
    const plane = await startPlane();
    await startAgent([plane.address]);
    await waitFor(() => plane.received.filter((m) => m.heartbeat).length >= 2, 3000);
    expect(Number(plane.received.find((m) => m.heartbeat)?.heartbeat?.sentUnixMs)).toBeGreaterThan(Date.now() - 10_000);
  });

  it('beats at the interval a HeartbeatPace tells from then on, in place of the Welcome one', async () => {
    const plane = await startPlane();
    plane.welcomeHeartbeatMs = 600_000;
    await startAgent([plane.address]);
    await waitFor(() => plane.received.some((m) => m.hello));
    plane.send({ heartbeatPace: { heartbeatIntervalMs: 100 } });
    // At the Welcome's 10 minutes, at most one beat would come in these 5 s.
    const beats = await waitFor(() => {
      const sent = plane.received.flatMap((m) => (m.heartbeat ? [Number(m.heartbeat.sentUnixMs)] : []));
      return sent.length >= 4 && sent.slice(-3);
    }, 5000);
    for (let i = 1; i < beats.length; i++) expect(beats[i]! - beats[i - 1]!).toBeGreaterThanOrEqual(90);
  });

  it('fails registration clearly when the token is refused', async () => {
    const plane = await startPlane();
    const error = await startAgent([plane.address], 'bad-token').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RegistrationError);
    expect((error as Error).message).toMatch(/refused the registration token/);
  });

  it('reconnects after a control-plane restart and re-sends unacknowledged logs and results', async () => {
    const plane = await startPlane();
    plane.autoAck = false;
    const agent = await startAgent([plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello));
    const task = runTask({ script: 'echo one\necho two\nexit 4' });
    plane.send({ runTask: task });
    await waitFor(() => resultsOf(plane, task.taskId)[0]);

    plane.stop();
    const restarted = await startPlane(plane.port, plane);
    const hello = await waitFor(() => restarted.received.find((m) => m.hello)?.hello, 10_000);
    expect(hello?.unacknowledgedResults).toEqual([
      expect.objectContaining({ taskId: task.taskId, outcome: 'FAILED', exitCode: 4, lastLogSeq: '3' }),
    ]);
    await waitFor(() => linesOf(restarted, task.taskId).length === 3);
    expect(linesOf(restarted, task.taskId)).toEqual(['1:one', '2:two', '3:The script exited with code 4']);

    // Acknowledged on the new replica: forgotten on the agent.
    restarted.send({ ackLogs: { taskId: task.taskId, seq: '3' } });
    restarted.send({ ackResult: { taskId: task.taskId } });
    await waitFor(() => agent.journal.get(task.taskId)?.forgotten);
  });

  it('keeps a script running across a control-plane restart and delivers every line to the new replica', async () => {
    const plane = await startPlane();
    await startAgent([plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello));
    const task = runTask({ script: 'echo before\nsleep 1\necho during\nsleep 1\necho after' });
    plane.send({ runTask: task });
    await waitFor(() => linesOf(plane, task.taskId).includes('1:before'));
    plane.stop();
    const restarted = await startPlane(plane.port, plane);
    const hello = await waitFor(() => restarted.received.find((m) => m.hello)?.hello, 10_000);
    expect(hello?.runningTaskIds).toEqual([task.taskId]);
    expect(await waitFor(() => resultsOf(restarted, task.taskId)[0], 10_000)).toMatchObject({
      outcome: 'SUCCEEDED',
      lastLogSeq: '3',
    });
    expect(linesOf(restarted, task.taskId)).toEqual(['2:during', '3:after']);
  });

  it('delivers a large output completely, in order and in bounded batches', async () => {
    const plane = await startPlane();
    await startAgent([plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello));
    const task = runTask({ script: 'seq 1 100000' });
    plane.send({ runTask: task });
    await waitFor(() => resultsOf(plane, task.taskId)[0], 20_000);
    const batches = plane.received
      .filter((m) => m.logBatch?.taskId === task.taskId)
      .map((m) => m.logBatch?.lines ?? []);
    const lines = batches.flat();
    expect(lines.length).toBe(100_000);
    expect(lines.every((line, index) => line.seq === String(index + 1) && line.text === String(index + 1))).toBe(true);
    expect(
      Math.max(...batches.map((batch) => batch.reduce((bytes, line) => bytes + line.text.length, 0))),
    ).toBeLessThanOrEqual(64 * 1024);
    expect(
      lines.every((line, index) => index === 0 || BigInt(line.unixNanos) > BigInt(lines[index - 1]?.unixNanos ?? '0')),
    ).toBe(true);
  });

  it('runs a duplicated RunTask only once', async () => {
    const plane = await startPlane();
    const agent = await startAgent([plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello));
    const marker = path.join(agent.home, 'runs.txt');
    const task = runTask({ script: `echo run >> ${marker}\nsleep 0.2` });
    plane.send({ runTask: task });
    plane.send({ runTask: task });
    await waitFor(() => resultsOf(plane, task.taskId)[0]);
    plane.send({ runTask: task });
    await waitFor(() => resultsOf(plane, task.taskId).length === 2);
    expect(readFileSync(marker, 'utf8')).toBe('run\n');
  });

  it('fails over to the next address when the first one is down', async () => {
    const plane = await startPlane();
    const dead = await FakeControlPlane.start();
    const deadAddress = dead.address;
    dead.stop();
    const started = Date.now();
    await startAgent([deadAddress, plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello), 10_000);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('fails over to the other replica at once when its own dies, however often that happens', async () => {
    const first = await startPlane();
    const spare = await FakeControlPlane.start();
    const secondPort = spare.port;
    spare.stop();
    // The agent's own reconnect decisions, read from its log: wall time on a loaded 2-core runner
    // says more about the runner than about the agent.
    const pauses: number[] = [];
    const decisions = new Writable({
      write(chunk: Buffer, _encoding, done) {
        const entry = JSON.parse(chunk.toString()) as { msg?: string; delayMs?: number };
        if (entry.msg === 'control-plane session ended; reconnecting') pauses.push(entry.delayMs ?? -1);
        done();
      },
    });
    // The agent's real backoff (0.5 s, doubling up to 30 s): the pause must not grow with the deaths.
    await startAgent(
      [first.address, `127.0.0.1:${secondPort}`],
      'good-token',
      undefined,
      DEFAULT_BACKOFF,
      pino({ level: 'warn' }, decisions),
    );
    await waitFor(() => first.received.find((m) => m.hello), 10_000);
    // The second replica knows the agent's credential, as replicas sharing a database do.
    const second = await startPlane(secondPort, first);
    let live = first;
    let other = second;
    for (let death = 0; death < 3; death++) {
      // A session that lasted past healthyAfterMs (1 s) is a replica that worked, not one that keeps
      // dropping us: wait for that before the next death, on the agent's own clock (it heartbeats
      // every 200 ms here, so six heartbeats after its Hello are 1.2 s of session).
      await waitFor(() => heartbeatsSinceHello(live) >= 6, 10_000);
      const hellosBefore = other.received.filter((m) => m.hello).length;
      const pausesBefore = pauses.length;
      live.stop();
      await waitFor(() => other.received.filter((m) => m.hello).length > hellosBefore, 10_000);
      // One short jittered pause, then the dead address is left for the other at once (no pause).
      const paused = pauses.slice(pausesBefore);
      expect(paused.length).toBeGreaterThanOrEqual(1);
      expect(paused.every((ms) => ms >= 0 && ms <= DEFAULT_BACKOFF.initialMs)).toBe(true);
      expect(paused.slice(1).every((ms) => ms === 0)).toBe(true);
      const restarted = await startPlane(live.port, live);
      [live, other] = [other, restarted];
    }
  });

  it('downloads a package in chunks over DownloadPackage and uses it in the script', async () => {
    const plane = await startPlane();
    const big = Buffer.alloc(300 * 1024, 'x');
    const zip = buildZip([
      { name: 'big.txt', data: big, deflate: true },
      { name: 'hello.txt', data: 'packaged' },
    ]);
    plane.packages.set('Acme@2.0.0', zip);
    await startAgent([plane.address]);
    await waitFor(() => plane.received.find((m) => m.hello));
    const sha256 = createHash('sha256').update(zip).digest('hex');
    const task = runTask({
      script: 'echo "$(cat "$PackageFolder/hello.txt")"; wc -c < "$PackageFolder/big.txt"',
      packages: [{ packageId: 'Acme', version: '2.0.0', sha256, sizeBytes: String(zip.length), format: 'zip' }],
    });
    plane.send({ runTask: task });
    expect(await waitFor(() => resultsOf(plane, task.taskId)[0])).toMatchObject({ outcome: 'SUCCEEDED' });
    expect(linesOf(plane, task.taskId).filter((l) => !/Fetching|Extracted/.test(l))).toEqual([
      '3:packaged',
      `4:${300 * 1024}`,
    ]);
  });
});
