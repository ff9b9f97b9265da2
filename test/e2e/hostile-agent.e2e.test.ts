/**
 * The agent trust boundary (#21), attacked from outside: a hostile client that speaks agent.proto
 * directly, holding one machine's real credential, against a real control plane (PostgreSQL +
 * NATS) with a real agent running a real step on another machine. Every attack must be refused
 * with a clear gRPC status, change no other task or deployment, and leave the control plane
 * healthy: its RSS grows at most 128 MiB and GET /api/me answers within 1 s while it lasts.
 * The suite prints one line per attack (answer, peak RSS, slowest /api/me) for the record.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeZip } from '../services/packages/archives.ts';
import { loadAgentProto, METADATA_AGENT_CREDENTIAL, METADATA_MACHINE_ID } from '../../services/gateway/index.ts';
import type { AgentServiceClient } from '../../proto/gen/gantry/agent/v1/AgentService.ts';
import type { AgentMessage } from '../../proto/gen/gantry/agent/v1/AgentMessage.ts';
import type { ServerMessage__Output } from '../../proto/gen/gantry/agent/v1/ServerMessage.ts';
import type { RunTask__Output } from '../../proto/gen/gantry/agent/v1/RunTask.ts';
import { waitFor } from '../helpers/wait-for.ts';
import { createTestDatabase } from '../helpers/database.ts';
import {
  api,
  bashProject,
  cleanup,
  logsOf,
  releaseAndDeploy,
  startControlPlane,
  startMachines,
  uploadPackage,
  waitForDeployment,
  workspaceOf,
  type Api,
  type ControlPlane,
} from './harness.ts';

const MiB = 1024 * 1024;
const PACKAGE_PROPERTY = JSON.stringify([
  { Id: 'Pkg', Name: 'Package', ControlType: 'PackageSelector', DefaultValue: '' },
]);

let plane: ControlPlane;
let client: Api;
let workspaceId: string;
let staging: string;
let lifecycleId: string;
let victimId: string;
const hostile = { machineId: '', credential: '', token: '' };
let agents: AgentServiceClient;
const minePackage = randomBytes(3 * MiB);

// ---- measuring the control plane while it is attacked ----

function rssMiB(): number {
  const status = readFileSync(`/proc/${plane.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface AttackRecord {
  attack: string;
  answer: string;
  baseMiB: number;
  peakMiB: number;
  slowestMeMs: number;
}
const records: AttackRecord[] = [];

/** Runs an attack while sampling the server's RSS and timing GET /api/me; asserts both bounds. */
async function underAttack<T>(attack: string, run: () => Promise<T>, answerOf: (result: T) => string): Promise<T> {
  const baseMiB = rssMiB();
  let peakMiB = baseMiB;
  let slowestMeMs = 0;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peakMiB = Math.max(peakMiB, rssMiB());
      await sleep(20);
    }
  })();
  const prober = (async () => {
    while (running) {
      const started = performance.now();
      const me = await client.get('/api/me');
      expect(me.status).toBe(200);
      slowestMeMs = Math.max(slowestMeMs, performance.now() - started);
      await sleep(50);
    }
  })();
  let result: T;
  try {
    result = await run();
  } finally {
    running = false;
    await Promise.all([sampler, prober]);
  }
  peakMiB = Math.max(peakMiB, rssMiB());
  const record = { attack, answer: answerOf(result), baseMiB, peakMiB, slowestMeMs };
  records.push(record);
  expect(peakMiB - baseMiB, `${attack}: server RSS growth (MiB)`).toBeLessThanOrEqual(128);
  expect(slowestMeMs, `${attack}: slowest GET /api/me (ms)`).toBeLessThanOrEqual(1000);
  return result;
}

// ---- a hostile client of agent.proto ----

function metadataOf(machineId: string, credential: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(METADATA_MACHINE_ID, machineId);
  metadata.set(METADATA_AGENT_CREDENTIAL, credential);
  return metadata;
}

function channelCredentials(): grpc.ChannelCredentials {
  return grpc.credentials.createInsecure();
}

function newClient(): AgentServiceClient {
  const AgentService = loadAgentProto().gantry.agent.v1.AgentService;
  return new AgentService(plane.grpcAddress, channelCredentials());
}

const codeName = (code: grpc.status | 'OK') => (code === 'OK' ? 'OK' : grpc.status[code]);

async function registerWith(token: string): Promise<{ code: string; machineId?: string; credential?: string }> {
  return new Promise((resolve) =>
    agents.Register({ registrationToken: token, hostname: 'evil', os: 'linux', agentVersion: '0' }, (error, reply) =>
      resolve(
        error
          ? { code: codeName(error.code) }
          : { code: 'OK', machineId: reply!.machineId, credential: reply!.agentCredential },
      ),
    ),
  );
}

/** Downloads a package with the hostile machine's credential: the status name and the bytes received. */
function download(packageId: string, version: string): Promise<{ code: string; bytes: number; details: string }> {
  return new Promise((resolve) => {
    let bytes = 0;
    const call = agents.DownloadPackage({ packageId, version }, metadataOf(hostile.machineId, hostile.credential));
    call.on('data', (chunk: { data: Buffer }) => (bytes += chunk.data.length));
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) =>
      resolve({ code: codeName(status.code), bytes, details: status.details }),
    );
  });
}

interface Session {
  received: ServerMessage__Output[];
  status: grpc.StatusObject | null;
  send(message: AgentMessage): void;
  close(): void;
}

function connect(machineId = hostile.machineId, credential = hostile.credential, on = agents): Session {
  const call = on.Connect(metadataOf(machineId, credential));
  const session: Session = {
    received: [],
    status: null,
    send: (message) => void call.write(message),
    close: () => call.cancel(),
  };
  call.on('data', (message: ServerMessage__Output) => session.received.push(message));
  call.on('status', (status: grpc.StatusObject) => (session.status = status));
  call.on('error', () => {});
  return session;
}

function hello(session: Session): void {
  session.send({ hello: { agentVersion: 'hostile', os: 'linux', hostname: 'evil' } });
}

async function runTaskOf(session: Session): Promise<RunTask__Output> {
  let task: RunTask__Output | undefined;
  await waitFor(
    async () => {
      task = session.received.find((m) => m.payload === 'runTask')?.runTask ?? undefined;
      return task !== undefined;
    },
    { timeoutMs: 20_000, intervalMs: 50, description: 'a RunTask for the hostile machine' },
  );
  return task!;
}

/** How the call ended (waits for it). */
async function endOf(on: Session, timeoutMs = 20_000): Promise<string> {
  await waitFor(async () => on.status !== null, { timeoutMs, intervalMs: 20, description: 'the call to end' });
  return `${codeName(on.status!.code)} "${on.status!.details}"`;
}

/** Waits until the server acknowledged lines of the task up to at least `seq`; returns the last ack. */
async function ackedUpTo(on: Session, taskId: string, seq: number): Promise<number> {
  let last = 0;
  await waitFor(
    async () => {
      if (on.status) throw new Error(`the call ended: ${codeName(on.status.code)} ${on.status.details}`);
      for (const m of on.received)
        if (m.payload === 'ackLogs' && m.ackLogs!.taskId === taskId) last = Math.max(last, Number(m.ackLogs!.seq));
      return last >= seq;
    },
    { timeoutMs: 30_000, intervalMs: 20, description: `AckLogs up to ${seq}` },
  );
  return last;
}

/** A fresh session of the hostile machine that says it is already running its task. */
async function reconnect(): Promise<Session> {
  session?.close();
  session = connect();
  session.send({
    hello: { agentVersion: 'hostile', os: 'linux', hostname: 'evil', runningTaskIds: [hostileTask.taskId] },
  });
  await waitFor(async () => session.received.some((m) => m.payload === 'welcome'), {
    timeoutMs: 10_000,
    intervalMs: 20,
    description: 'Welcome',
  });
  return session;
}

/** A LogChunk of these lines (every line STDOUT), dated `unixNanos`. */
function chunk(
  taskId: string,
  firstSeq: number,
  lines: string[],
  unixNanos = `${BigInt(Date.now()) * 1_000_000n}`,
): AgentMessage {
  return {
    logBatch: {
      taskId,
      chunk: {
        firstSeq: String(firstSeq),
        count: lines.length,
        firstUnixNanos: unixNanos,
        text: Buffer.from(lines.map((line) => `${line}\n`).join('')),
      },
    },
  };
}

/** A LogChunk of `count` empty lines, built without an array per line. */
function emptyLines(taskId: string, firstSeq: number, count: number): AgentMessage {
  return {
    logBatch: {
      taskId,
      chunk: { firstSeq: String(firstSeq), count, firstUnixNanos: '0', text: Buffer.alloc(count, 0x0a) },
    },
  };
}

function varint(value: number): Buffer {
  const bytes: number[] = [];
  for (; value > 0x7f; value = Math.floor(value / 128)) bytes.push((value & 0x7f) | 0x80);
  bytes.push(value);
  return Buffer.from(bytes);
}

const encodeAgentMessage = (message: AgentMessage): Buffer =>
  loadAgentProto().gantry.agent.v1.AgentService.service.Connect.requestSerialize(message);

/** A Connect call of the hostile machine that sends bytes as they are (malformed ones too). */
function rawConnect(): Session & { send(bytes: Buffer): void } {
  const call = agents.makeBidiStreamRequest<Buffer, Buffer>(
    '/gantry.agent.v1.AgentService/Connect',
    (bytes) => bytes,
    (bytes) => bytes,
    metadataOf(hostile.machineId, hostile.credential),
  );
  const raw = {
    received: [],
    status: null as grpc.StatusObject | null,
    send: (bytes: Buffer) => void call.write(bytes),
    close: () => call.cancel(),
  };
  call.on('status', (status: grpc.StatusObject) => (raw.status = status));
  call.on('error', () => {});
  call.on('data', () => {});
  return raw;
}

// ---- the world the attacks must not change ----

let victimDeploymentId: string;
let bystanderDeploymentId: string;
let hostileDeploymentId: string;
let hostileTask: RunTask__Output;
let session: Session;

/** Everything the API says about a deployment: its status, its targets and every log line. */
async function stateOf(deploymentId: string): Promise<string> {
  const deployment = await client.get('/api/deployment', { deploymentId, skipLogs: 'False' });
  const targets = await client.get('/api/deployment/targets', { deploymentId });
  return JSON.stringify({ deployment: deployment.body, targets: targets.body });
}

describe('a hostile agent with one machine’s real credential', () => {
  let bystanderBefore: string;

  beforeAll(async () => {
    plane = await startControlPlane({
      databaseUrl: (await createTestDatabase()).url,
      natsUrl: 'nats://127.0.0.1:4222',
      natsPrefix: `e2e_${randomBytes(4).toString('hex')}`,
    });
    client = api(plane.url);
    const workspace = await workspaceOf(client);
    workspaceId = workspace.workspaceId;
    staging = workspace.environments.Staging!;
    lifecycleId = workspace.defaultLifecycleId;
    ({ victim: victimId } = (await startMachines(plane, client, workspaceId, [
      { name: 'victim', environmentIds: [staging] },
    ])) as { victim: string });
    const created = await client.post('/api/machine', { workspaceId, name: 'hostile', environmentIds: [staging] });
    expect(created.status, created.text).toBe(200);
    agents = newClient();
    hostile.token = created.body.registrationToken;
    const registered = await registerWith(hostile.token);
    expect(registered.code).toBe('OK');
    hostile.machineId = registered.machineId!;
    hostile.credential = registered.credential!;

    for (const [name, data] of [
      ['Shared.1.0.0.zip', makeZip([{ name: 'shared.txt', data: Buffer.from('victim only') }])],
      ['Unused.1.0.0.zip', makeZip([{ name: 'unused.txt', data: Buffer.from('no step uses me') }])],
      ['Mine.1.0.0.zip', makeZip([{ name: 'mine.bin', data: minePackage }])],
    ] as const) {
      const uploaded = await uploadPackage(plane.url, workspaceId, name, data);
      expect(uploaded.status, uploaded.text).toBe(200);
    }

    // A finished deployment on the victim: nothing the hostile machine does may change it.
    const bystander = await bashProject(client, workspaceId, lifecycleId, [
      { name: 'Done', script: 'echo bystander finished', settings: { machineIdFilter: [victimId] } },
    ]);
    bystanderDeploymentId = (await releaseAndDeploy(client, bystander.projectId, ['Staging']))[0]!;
    expect((await waitForDeployment(client, bystanderDeploymentId!)).Status).toBe('Completed');
    bystanderBefore = await stateOf(bystanderDeploymentId!);

    // The victim runs a real step that uses package Shared until the suite ends.
    const victim = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Victim work',
        script: 'echo victim started; sleep 120',
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { machineIdFilter: [victimId], propertiesJson: JSON.stringify({ Pkg: 'Shared' }) },
      },
    ]);
    victimDeploymentId = (await releaseAndDeploy(client, victim.projectId, ['Staging']))[0]!;
    await waitFor(async () => (await logsOf(client, victimDeploymentId)).some((l) => l.Data === 'victim started'), {
      timeoutMs: 30_000,
      intervalMs: 100,
      description: 'the victim step to start',
    });

    // The hostile machine is given a step of its own, using package Mine.
    const own = await bashProject(client, workspaceId, lifecycleId, [
      {
        name: 'Hostile work',
        script: 'echo never run by a real agent',
        propertiesRaw: PACKAGE_PROPERTY,
        settings: { machineIdFilter: [hostile.machineId], propertiesJson: JSON.stringify({ Pkg: 'Mine' }) },
      },
    ]);
    hostileDeploymentId = (await releaseAndDeploy(client, own.projectId, ['Staging']))[0]!;
    session = connect();
    hello(session);
    hostileTask = await runTaskOf(session);
    expect(hostileTask.packages.map((p) => `${p.packageId}@${p.version}`)).toEqual(['Mine@1.0.0']);
  }, 120_000);

  afterAll(async () => {
    session?.close();
    agents?.close();
    for (const r of records)
      console.log(
        `[hostile] ${r.attack}: ${r.answer} | RSS ${r.baseMiB.toFixed(0)} → peak ${r.peakMiB.toFixed(0)} MiB (+${(r.peakMiB - r.baseMiB).toFixed(0)}) | slowest /api/me ${r.slowestMeMs.toFixed(0)} ms`,
      );
    await cleanup();
  });

  it('defect 1: downloads only the package versions its own running task uses', async () => {
    const answers = await underAttack(
      'DownloadPackage of another machine’s package, of an unused one, of its own',
      async () => ({
        shared: await download('Shared', '1.0.0'),
        unused: await download('Unused', '1.0.0'),
        otherVersion: await download('Mine', '0.9.0'),
        mine: await download('Mine', '1.0.0'),
      }),
      (a) => `Shared ${a.shared.code}, Unused ${a.unused.code}, Mine@0.9.0 ${a.otherVersion.code}, Mine ${a.mine.code}`,
    );
    expect(answers.shared).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.unused).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.otherVersion).toMatchObject({ code: 'NOT_FOUND', bytes: 0 });
    expect(answers.mine.code).toBe('OK');
    expect(answers.mine.bytes).toBeGreaterThan(minePackage.length);
  });

  /** Lines of the hostile task stored so far (its seq). */
  let stored = 0;
  const hostileLines = async () =>
    (await logsOf(client, hostileDeploymentId)).filter((l) => l.Data !== undefined && l.LogLevel !== undefined);

  it('defect 3: a line longer than 32 Ki characters is stored cut there, saying so', async () => {
    const long = 'x'.repeat(100_000);
    await underAttack(
      'one line of 100,000 characters in a chunk',
      async () => {
        session.send(chunk(hostileTask.taskId, 1, [long, 'after the long line']));
        return ackedUpTo(session, hostileTask.taskId, 2);
      },
      (ack) => `AckLogs seq ${ack}`,
    );
    stored = 2;
    const lines = (await hostileLines()).map((l) => l.Data);
    const cut = lines.find((l) => l.startsWith('xxx'))!;
    expect(cut).toBe(`${'x'.repeat(32 * 1024)}… [cut: ${100_000 - 32 * 1024} more characters]`);
    expect(lines).toContain('after the long line');
  });

  it('defect 5: times an agent reports are clamped to the server’s receive time, in the server’s order', async () => {
    const before = Date.now();
    await underAttack(
      'lines dated 2262 and 1970',
      async () => {
        session.send(chunk(hostileTask.taskId, 3, ['dated 2262'], '9200000000000000000'));
        session.send(chunk(hostileTask.taskId, 4, ['dated 1970'], '1'));
        return ackedUpTo(session, hostileTask.taskId, 4);
      },
      (ack) => `AckLogs seq ${ack}`,
    );
    stored = 4;
    const deployment = (await client.get('/api/deployment', { deploymentId: hostileDeploymentId })).body;
    expect(new Date(deployment.status.LastLogDate).getTime()).toBeLessThanOrEqual(Date.now() + 1000);
    const lines = await hostileLines();
    const tickOf = (data: string) => BigInt(lines.find((l) => l.Data === data)!.CreatedUtcTick);
    const ticksOfNow = BigInt(before) * 10_000n + 621_355_968_000_000_000n;
    expect(tickOf('dated 2262')).toBeGreaterThanOrEqual(tickOf('after the long line'));
    expect(tickOf('dated 1970')).toBeGreaterThan(tickOf('dated 2262'));
    expect(tickOf('dated 2262')).toBeLessThan(ticksOfNow + 600_000_000n);
  });

  it('defect 3: a chunk of 600,000 empty lines is refused before it is stored', async () => {
    const answer = await underAttack(
      'one chunk of 600,000 empty lines',
      async () => {
        session.send(emptyLines(hostileTask.taskId, stored + 1, 600_000));
        return endOf(session);
      },
      (end) => end,
    );
    expect(answer).toMatch(/^INVALID_ARGUMENT .*600000 lines/);
    expect((await client.get('/api/deployment', { deploymentId: hostileDeploymentId })).body.status.Status).toBe(
      'Running',
    );
    expect((await hostileLines()).some((l) => l.Data === '')).toBe(false);
    await reconnect();
  });

  it('defect 3: a 3.9 MB line is refused with a clear status', async () => {
    const answer = await underAttack(
      'one line of 3.9 MB',
      async () => {
        session.send(chunk(hostileTask.taskId, stored + 1, ['y'.repeat(3_900_000)]));
        return endOf(session);
      },
      (end) => end,
    );
    expect(answer).toMatch(/^(RESOURCE_EXHAUSTED|INVALID_ARGUMENT) /);
    expect((await hostileLines()).some((l) => l.Data.startsWith('yyy'))).toBe(false);
    await reconnect();
  });

  it('defect 3: a batch of 900,000 one-message-per-line empty lines is refused without decoding it', async () => {
    // Encoded by hand (the client would spend seconds building 900,000 objects): AgentMessage
    // { log_batch (4) { task_id (1), lines (2) × 900,000 empty LogLine } }, 1.8 MB.
    const taskId = Buffer.from(hostileTask.taskId);
    const inner = Buffer.concat([
      Buffer.from([0x0a, taskId.length]),
      taskId,
      Buffer.alloc(900_000 * 2, Buffer.from([0x12, 0])),
    ]);
    const flood = Buffer.concat([Buffer.from([0x22]), varint(inner.length), inner]);
    const raw = rawConnect();
    raw.send(encodeAgentMessage({ hello: { agentVersion: 'hostile', runningTaskIds: [hostileTask.taskId] } }));
    const answer = await underAttack(
      'one LogBatch of 900,000 LogLine messages (1.8 MB)',
      async () => {
        raw.send(flood);
        return endOf(raw);
      },
      (end) => end,
    );
    expect(answer).toMatch(/^INVALID_ARGUMENT "LogBatch refused: 900000 LogLine messages/);
    await reconnect();
  });

  it('defect 3: 48 chunks of 1 MiB sent at once are taken in bounded memory', async () => {
    const line = 'z'.repeat(1023);
    const perChunk = 1024;
    const ack = await underAttack(
      '48 chunks of 1 MiB at once',
      async () => {
        const lines = Array.from({ length: perChunk }, () => line);
        for (let i = 0; i < 48; i++) session.send(chunk(hostileTask.taskId, stored + 1 + i * perChunk, lines));
        return ackedUpTo(session, hostileTask.taskId, stored + 48 * perChunk);
      },
      (acked) => `AckLogs seq ${acked}`,
    );
    stored += 48 * perChunk;
    expect(ack).toBe(stored);
  }, 90_000);

  it('defect 4: 1,000 downloads that never read are capped and cost bounded memory', async () => {
    const channels = Array.from({ length: 8 }, () => newClient());
    const calls: Array<grpc.ClientReadableStream<unknown>> = [];
    const codes: Record<string, number> = {};
    try {
      await underAttack(
        '1,000 concurrent DownloadPackage streams that never read',
        async () => {
          for (let i = 0; i < 1000; i++) {
            const call = channels[i % channels.length]!.DownloadPackage(
              { packageId: 'Mine', version: '1.0.0' },
              metadataOf(hostile.machineId, hostile.credential),
            );
            call.on('error', () => {});
            call.on('status', (status: grpc.StatusObject) => {
              const name = codeName(status.code);
              codes[name] = (codes[name] ?? 0) + 1;
            });
            calls.push(call);
          }
          // Long enough for the server to fill every buffer it is willing to fill.
          await sleep(3000);
          return codes;
        },
        (c) => JSON.stringify(c),
      );
      // Four run (they wait for the agent to read), the rest are turned away at once.
      expect(codes.RESOURCE_EXHAUSTED).toBeGreaterThanOrEqual(990);
    } finally {
      for (const call of calls) call.cancel();
      for (const channel of channels) channel.close();
    }
    // Its own download still works once the stalled ones are gone.
    await sleep(500);
    expect((await download('Mine', '1.0.0')).code).toBe('OK');
  });

  it('leaves every other deployment as it was', async () => {
    expect(await stateOf(bystanderDeploymentId)).toBe(bystanderBefore);
    const victim = await client.get('/api/deployment', { deploymentId: victimDeploymentId });
    expect(victim.body.status.Status).toBe('Running');
    expect((await client.get('/api/deployment', { deploymentId: hostileDeploymentId })).status).toBe(200);
  });
});
