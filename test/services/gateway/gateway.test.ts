import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, EventSubject, type Bus } from '../../../services/bus/index.ts';
import { createLogger, hashSecret } from '../../../services/core/index.ts';
import type { Gateway } from '../../../services/gateway/index.ts';
import { ACCEPT_BACKLOG } from '../../../services/gateway/gateway.ts';
import type { AgentServiceClient } from '../../../proto/gen/gantry/agent/v1/AgentService.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  agentClient,
  agentMetadata,
  codeOf,
  FakeAgentPort,
  openStream,
  register,
  task,
  type AgentStream,
  testGateway,
} from './harness.ts';

let t: TestContext;
let bus: Bus;
let gateway: Gateway;
let client: AgentServiceClient;
let listeningPort: number;
const port = new FakeAgentPort();
const streams: AgentStream[] = [];

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  bus = await createBus({ natsUrl: null, logger });
  gateway = testGateway(t, bus, port, {
    heartbeat: 1234,
  });
  listeningPort = await gateway.start(0, '127.0.0.1');
  client = agentClient(listeningPort);
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  client?.close();
  await gateway?.stop();
  await bus?.close();
});

async function newMachine(workspaceId = t.mainWorkspaceId) {
  const created = await t.admin.post('/api/machine', { workspaceId, name: `m-${Math.random().toString(36).slice(2)}` });
  if (created.status !== 200) throw new Error(created.text);
  return created.body as { machineId: string; registrationToken: string };
}

async function registeredMachine() {
  const { registrationToken } = await newMachine();
  const response = await register(client, {
    registrationToken,
    hostname: 'host-1',
    os: 'linux x64',
    agentVersion: '1.0.0',
  });
  return { machineId: response.machineId, credential: response.agentCredential };
}

function connect(machineId: string, credential: string): AgentStream {
  const stream = openStream(client, agentMetadata(machineId, credential));
  streams.push(stream);
  return stream;
}

/** The engine's wake-up: this task of the deployment started on this machine. */
function dispatched(deploymentId: string, taskId: string, machineId: string): Promise<void> {
  return bus.publishEvent(EventSubject.tasksDispatched(deploymentId), {
    v: 1,
    type: 'tasks.dispatched',
    deploymentId,
    tasks: [{ taskId, machineId }],
  });
}

/** A registered machine whose agent is connected and has said Hello. */
async function helloedAgent(hello: Record<string, unknown> = {}) {
  const machine = await registeredMachine();
  const stream = connect(machine.machineId, machine.credential);
  stream.send({ hello: { agentVersion: '1.0.0', os: 'linux x64', hostname: 'host-1', ...hello } });
  await waitFor(() => port.callsOf('assignmentsFor', machine.machineId).length > 0, {
    description: 'tasks asked after Hello',
  });
  return { ...machine, stream };
}

describe('listening', () => {
  it('listens with an accept backlog a fleet reconnecting at once fits in, not Node default of 511', () => {
    // `ss` shows a listening socket's backlog as its Send-Q; the kernel caps it at somaxconn.
    const [line] = execFileSync('ss', ['-ltnH', `sport = :${listeningPort}`], { encoding: 'utf8' })
      .trim()
      .split('\n');
    const backlog = Number(line!.trim().split(/\s+/)[2]);
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    expect(backlog).toBe(Math.min(ACCEPT_BACKLOG, somaxconn));
    expect(backlog).toBeGreaterThan(511);
  });
});

describe('upgrades at Hello', () => {
  it('sends UpgradeAgent for an upgrade asked while the agent was away, from what the connect answered, without a read of its own', async () => {
    // A gateway that ships agent 9.9.9 (the bytes are never sent here: UpgradeAgent names them).
    const shipping = testGateway(t, bus, port, {
      heartbeat: 1234,
      agentBundle: {
        version: '9.9.9',
        archiveName: 'gantry-agent-9.9.9.tgz',
        sha256: 'a'.repeat(64),
        bytes: Buffer.from('x'),
      },
    });
    const shippingClient = agentClient(await shipping.start(0, '127.0.0.1'));
    try {
      const { registrationToken } = await newMachine();
      const { machineId, agentCredential } = await register(shippingClient, {
        registrationToken,
        hostname: 'host-1',
        os: 'linux x64',
        agentVersion: '1.0.0',
      });
      port.upgrades.set(machineId, '9.9.9');
      const stream = openStream(shippingClient, agentMetadata(machineId, agentCredential));
      streams.push(stream);
      stream.send({ hello: { agentVersion: '1.0.0', os: 'linux x64', hostname: 'host-1' } });
      await waitFor(() => stream.of('upgradeAgent').length === 1, { description: 'UpgradeAgent' });
      expect(stream.of('upgradeAgent')).toEqual([
        { version: '9.9.9', bundleName: 'gantry-agent-9.9.9.tgz', sha256: 'a'.repeat(64), sizeBytes: '1' },
      ]);
      expect(port.callsOf('pendingUpgrade', machineId)).toEqual([]);
      stream.close();
    } finally {
      port.upgrades.clear();
      shippingClient.close();
      await shipping.stop();
    }
  });
});

describe('heartbeat pace', () => {
  it('tells each agent an interval that grows with the agents connected here, and tells it again at a heartbeat once that moved by 10 %', async () => {
    // 5 heartbeats a second at most: 1 agent → 200 ms (the base), 4 → 800 ms; at most 2 s.
    const paced = testGateway(t, bus, port, {
      heartbeat: { baseMs: 200, maxMs: 2_000, perSecond: 5 },
    });
    const pacedClient = agentClient(await paced.start(0, '127.0.0.1'));
    const agents: AgentStream[] = [];
    const machineIds: string[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const { registrationToken } = await newMachine();
        const { machineId, agentCredential } = await register(pacedClient, {
          registrationToken,
          hostname: `host-${i}`,
          os: 'linux x64',
          agentVersion: '1.0.0',
        });
        const stream = openStream(pacedClient, agentMetadata(machineId, agentCredential));
        streams.push(stream);
        agents.push(stream);
        machineIds.push(machineId);
        stream.send({ hello: { agentVersion: '1.0.0', os: 'linux x64', hostname: `host-${i}` } });
        await waitFor(() => stream.of('welcome').length === 1, { description: `Welcome ${i}` });
        await waitFor(() => port.callsOf('assignmentsFor', machineId).length > 0, { description: `Hello ${i}` });
      }
      expect(agents.map((stream) => stream.of('welcome')[0]?.heartbeatIntervalMs)).toEqual([200, 400, 600, 800]);
      const [first, , , last] = agents;

      first!.send({ heartbeat: { sentUnixMs: Date.now() } });
      await waitFor(() => first!.of('heartbeatPace').length === 1, { description: 'HeartbeatPace to the first' });
      expect(first!.of('heartbeatPace')).toEqual([{ heartbeatIntervalMs: 800 }]);
      // The last was told 800 in its Welcome: nothing to tell. A marker task sent on its call after
      // its beat shows that a HeartbeatPace, sent at the beat, would have come first.
      last!.send({ heartbeat: { sentUnixMs: Date.now() } });
      await waitFor(() => port.callsOf('heartbeat', machineIds[3]!).length === 1, { description: "the last's beat" });
      port.tasks.set(machineIds[3]!, [task('pace-marker')]);
      await dispatched('deployment-pace', 'pace-marker', machineIds[3]!);
      await waitFor(() => last!.of('runTask').length === 1, { description: 'the marker' });
      expect(last!.received.map((m) => m.payload)).toEqual(['welcome', 'runTask']);
      // Once the others left, the first is told again at its next beat (800 → 200 ms).
      for (const stream of agents.slice(1)) stream.close();
      await waitFor(() => paced.connectedMachineIds().length === 1, { description: 'three agents gone' });
      first!.send({ heartbeat: { sentUnixMs: Date.now() } });
      await waitFor(() => first!.of('heartbeatPace').length === 2, { description: 'HeartbeatPace again' });
      expect(first!.of('heartbeatPace')[1]).toEqual({ heartbeatIntervalMs: 200 });
      first!.close();
    } finally {
      pacedClient.close();
      await paced.stop();
    }
  });
});

describe('Register', () => {
  it('trades the token for a credential once and stores only its hash when the token is valid', async () => {
    const { machineId, registrationToken } = await newMachine();
    const response = await register(client, {
      registrationToken,
      hostname: 'web-01',
      os: 'linux x64',
      agentVersion: '1.2.3',
    });
    expect(response.machineId).toBe(machineId);
    expect(response.agentCredential).toMatch(/^[\w-]{40,}$/);

    const [row] = await t.db('machines').where({ id: machineId });
    expect(row.agent_credential_hash).toBe(hashSecret(response.agentCredential));
    expect(row.registration_token_hash).toBeNull();
    expect({ hostname: row.hostname, os: row.os, agentVersion: row.agent_version }).toEqual({
      hostname: 'web-01',
      os: 'linux x64',
      agentVersion: '1.2.3',
    });
    expect(JSON.stringify(row)).not.toContain(response.agentCredential);

    expect(await codeOf(register(client, { registrationToken }))).toBe(grpc.status.UNAUTHENTICATED);
  });

  it('refuses with UNAUTHENTICATED when the token is wrong or empty', async () => {
    await newMachine();
    expect(await codeOf(register(client, { registrationToken: 'not-a-token' }))).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(register(client, { registrationToken: '' }))).toBe(grpc.status.UNAUTHENTICATED);
  });

  it('refuses with UNAUTHENTICATED when the token has expired', async () => {
    const { machineId, registrationToken } = await newMachine();
    await t
      .db('machines')
      .where({ id: machineId })
      .update({ registration_expires_at: new Date(Date.now() - 1000) });
    expect(await codeOf(register(client, { registrationToken }))).toBe(grpc.status.UNAUTHENTICATED);
    const [row] = await t.db('machines').where({ id: machineId });
    expect(row.agent_credential_hash).toBeNull();
  });
});

describe('Connect', () => {
  it('ends the call with UNAUTHENTICATED when the credential or machine ID is wrong', async () => {
    const machine = await registeredMachine();
    const other = await registeredMachine();
    const wrongCredential = connect(machine.machineId, 'wrong');
    const wrongMachine = connect(other.machineId, machine.credential);
    const missing = openStream(client, new grpc.Metadata());
    streams.push(missing);
    for (const stream of [wrongCredential, wrongMachine, missing]) {
      const status = await waitFor(() => stream.status, { description: 'call status' });
      expect(status.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(stream.received).toEqual([]);
    }
    expect(port.callsOf('connected', machine.machineId)).toEqual([]);
  });

  it('sends Welcome, then acks unacknowledged results, cancels and runs the canned tasks when the agent says Hello', async () => {
    const machine = await registeredMachine();
    port.tasks.set(machine.machineId, [
      task('task-a'),
      task('task-b', {
        env: { A: '1' },
        packages: [{ packageId: 'app', version: '1.0.0', sha256: 'ab', sizeBytes: 10, format: 'zip' }],
        packageFolderToken: '#{CONTEXT.PackageFolder:task-b}',
      }),
      task('task-running'),
    ]);
    port.cancellations.set(machine.machineId, ['task-x']);
    const stream = connect(machine.machineId, machine.credential);
    await waitFor(() => stream.of('welcome').length === 1, { description: 'Welcome' });
    expect(stream.of('welcome')[0]?.heartbeatIntervalMs).toBe(1234);

    stream.send({
      hello: {
        agentVersion: '2.0.0',
        os: 'linux x64',
        hostname: 'web-02',
        runningTaskIds: ['task-running'],
        unacknowledgedResults: [
          {
            taskId: 'task-old',
            outcome: 'FAILED',
            exitCode: -1,
            message: 'agent restarted during the step',
            lastLogSeq: 7,
          },
        ],
      },
    });
    await waitFor(() => stream.of('runTask').length === 2, { description: 'two RunTask' });

    expect(port.callsOf('connected', machine.machineId)).toEqual([
      {
        method: 'connected',
        machineId: machine.machineId,
        sessionId: expect.any(String),
        info: { agentVersion: '2.0.0', os: 'linux x64', hostname: 'web-02' },
      },
    ]);
    expect(port.callsOf('recordResult', machine.machineId)).toEqual([
      {
        method: 'recordResult',
        machineId: machine.machineId,
        taskId: 'task-old',
        result: { outcome: 'FAILED', exitCode: -1, message: 'agent restarted during the step', lastLogSeq: 7 },
      },
    ]);
    expect(stream.received.map((m) => m.payload)).toEqual(['welcome', 'ackResult', 'cancelTask', 'runTask', 'runTask']);
    expect(stream.of('ackResult')).toEqual([{ taskId: 'task-old' }]);
    expect(stream.of('cancelTask')).toEqual([{ taskId: 'task-x', graceMs: 0 }]);
    // The task the agent already runs is not sent again.
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['task-a', 'task-b']);
    expect(stream.of('runTask')[1]).toEqual({
      taskId: 'task-b',
      deploymentId: 'deployment-1',
      stepName: 'Step 1',
      script: 'echo hello',
      scriptLanguage: 'bash',
      env: { A: '1' },
      sensitiveValues: [],
      packages: [{ packageId: 'app', version: '1.0.0', sha256: 'ab', sizeBytes: '10', format: 'zip' }],
      redownloadPackages: false,
      timeoutSeconds: 0,
      packageFolderToken: '#{CONTEXT.PackageFolder:task-b}',
    });
    expect(gateway.connectedMachineIds()).toContain(machine.machineId);
  });

  it('accepts a disabled machine and leaves the choice of work to the engine', async () => {
    const machine = await registeredMachine();
    const updated = await t.admin.put('/api/machine', { machineId: machine.machineId, enabled: false });
    expect(updated.status).toBe(200);
    port.tasks.set(machine.machineId, []);
    const stream = connect(machine.machineId, machine.credential);
    stream.send({ hello: {} });
    await waitFor(() => port.callsOf('assignmentsFor', machine.machineId).length === 1, { description: 'tasks asked' });
    expect(stream.status).toBeNull();
    expect(stream.of('runTask')).toEqual([]);
  });

  it('ends the call with INVALID_ARGUMENT when the first message is not Hello', async () => {
    const machine = await registeredMachine();
    const stream = connect(machine.machineId, machine.credential);
    stream.send({ heartbeat: { sentUnixMs: 1 } });
    const status = await waitFor(() => stream.status, { description: 'call status' });
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(port.callsOf('connected', machine.machineId)).toEqual([]);
    expect(port.callsOf('disconnected', machine.machineId)).toEqual([]);
  });

  it('records a Heartbeat with the engine', async () => {
    const { machineId, stream } = await helloedAgent();
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('heartbeat', machineId).length === 1, { description: 'a heartbeat' });
    expect(port.callsOf('connected', machineId)).toHaveLength(1);
  });

  it('tells the engine when a session ends, naming the session that began', async () => {
    const { machineId, stream } = await helloedAgent();
    const [began] = port.callsOf('connected', machineId);
    stream.close();
    const [ended] = await waitFor(() => {
      const calls = port.callsOf('disconnected', machineId);
      return calls.length > 0 ? calls : null;
    });
    expect(ended).toEqual({ method: 'disconnected', machineId, sessionId: began!.sessionId });
  });

  it("sends only the new tasks at each sync of a machine's tasks", async () => {
    const { machineId, stream } = await helloedAgent();
    port.tasks.set(machineId, [task('t1')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 1, { description: 'first task' });

    port.tasks.set(machineId, [task('t1'), task('t2'), task('t3')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 3, { description: 'two more tasks' });
    // Two more heartbeats check the same three tasks (and, nothing new, read no assignments); then
    // one more brings a marker task. Sends keep the order of the syncs, so a task sent twice would
    // show before the marker.
    const syncs = port.callsOf('assignmentsFor', machineId).length;
    const checks = port.callsOf('runningTasksOf', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length === checks + 2, { description: 'two checks' });
    expect(port.callsOf('assignmentsFor', machineId)).toHaveLength(syncs);
    port.tasks.set(machineId, [task('t1'), task('t2'), task('t3'), task('marker')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').some((r) => r.taskId === 'marker'), { description: 'the marker' });
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['t1', 't2', 't3', 'marker']);
  });

  it('reads the tasks of a tasks.dispatched event once for all its connected machines and sends each its own', async () => {
    const a = await helloedAgent();
    const b = await helloedAgent();
    port.tasks.set(a.machineId, [task('a-1')]);
    port.tasks.set(b.machineId, [task('b-1')]);
    const before = port.calls.filter((c) => c.method === 'dispatchedTasks').length;
    await bus.publishEvent(EventSubject.tasksDispatched('deployment-1'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'deployment-1',
      // A machine whose agent is held elsewhere is not asked about here.
      tasks: [
        { taskId: 'a-1', machineId: a.machineId },
        { taskId: 'b-1', machineId: b.machineId },
        { taskId: 'x-1', machineId: 'elsewhere' },
      ],
    });
    await waitFor(() => a.stream.of('runTask').length === 1 && b.stream.of('runTask').length === 1, {
      description: 'both tasks',
    });
    const reads = port.calls.filter((c) => c.method === 'dispatchedTasks').slice(before);
    expect(reads).toEqual([{ method: 'dispatchedTasks', machineId: '', taskIds: ['a-1', 'b-1'] }]);
    expect(a.stream.of('runTask').map((r) => r.taskId)).toEqual(['a-1']);
    expect(b.stream.of('runTask').map((r) => r.taskId)).toEqual(['b-1']);

    // Sent once per call, whichever wake-up comes next: a heartbeat's sync and the same event again
    // read a-1 once more; a later event's marker task shows that a second a-1 would have come first.
    a.stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await bus.publishEvent(EventSubject.tasksDispatched('deployment-1'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'deployment-1',
      tasks: [{ taskId: 'a-1', machineId: a.machineId }],
    });
    port.tasks.set(a.machineId, [task('a-1'), task('a-marker')]);
    await bus.publishEvent(EventSubject.tasksDispatched('deployment-2'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'deployment-2',
      tasks: [{ taskId: 'a-marker', machineId: a.machineId }],
    });
    await waitFor(() => a.stream.of('runTask').some((r) => r.taskId === 'a-marker'), { description: 'the marker' });
    expect(a.stream.of('runTask').map((r) => r.taskId)).toEqual(['a-1', 'a-marker']);
  });

  it('asks nothing when no machine of a tasks.dispatched event is connected here, and survives a failed read', async () => {
    const { machineId, stream } = await helloedAgent();
    const before = port.calls.filter((c) => c.method === 'dispatchedTasks').length;
    await bus.publishEvent(EventSubject.tasksDispatched('d-2'), {
      v: 1,
      type: 'tasks.dispatched',
      deploymentId: 'd-2',
      tasks: [{ taskId: 'x-2', machineId: 'elsewhere' }],
    });

    port.tasks.set(machineId, [task('late-1')]);
    port.failNext.add('dispatchedTasks:');
    await dispatched('d-2', 'late-1', machineId);
    await waitFor(() => port.calls.filter((c) => c.method === 'dispatchedTasks').length > before, {
      description: 'the failed read',
    });
    // Events are handled in order: the first (no machine here) asked nothing, so this is the only read.
    expect(port.calls.filter((c) => c.method === 'dispatchedTasks').slice(before)).toEqual([
      { method: 'dispatchedTasks', machineId: '', taskIds: ['late-1'] },
    ]);
    expect(stream.of('runTask')).toEqual([]);
    // The call stays open and the next heartbeat brings the task.
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the task after a heartbeat' });
    expect(stream.status).toBeNull();
  });
  it("sends a task whose wake-up was lost at the agent's next Heartbeat", async () => {
    // A replica can die between starting a task and publishing its wake-up, and core NATS events
    // are best-effort: the heartbeat re-checks the machine's tasks so none waits forever.
    const { machineId, stream } = await helloedAgent();
    const syncsAtHello = port.callsOf('assignmentsFor', machineId).length;
    port.tasks.set(machineId, [task('lost-1')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the task after a heartbeat' });
    const syncs = port.callsOf('assignmentsFor', machineId).length;
    // Nothing but that heartbeat read the machine's tasks (no wake-up came).
    expect(syncs).toBe(syncsAtHello + 1);
    // The next heartbeats check the machine's running tasks again (one batched read each), find
    // nothing the call has not sent, read no assignments and send nothing twice.
    const checks = port.callsOf('runningTasksOf', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length > checks, { description: 'the next check' });
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length > checks + 1, {
      description: 'one more check',
    });
    expect(port.callsOf('assignmentsFor', machineId)).toHaveLength(syncs);
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['lost-1']);
  });

  it("forgets a task that ended at the next heartbeat's check, without reading the machine's assignments", async () => {
    // After a deployment to a whole fleet, a full sync here would be one more read per machine.
    const { machineId, stream } = await helloedAgent();
    port.tasks.set(machineId, [task('done-1')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the task' });
    const syncs = port.callsOf('assignmentsFor', machineId).length;
    port.tasks.set(machineId, []);
    const checks = port.callsOf('runningTasksOf', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    // A sync the first check asked for reads at once, before the second heartbeat is even handled.
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length === checks + 2, { description: 'two checks' });
    expect(port.callsOf('assignmentsFor', machineId)).toHaveLength(syncs);
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['done-1']);
  });

  it('keeps a task sent while a check was reading: the check may not show it yet, and it is not sent twice', async () => {
    const { machineId, stream } = await helloedAgent();
    let answer!: () => void;
    port.runningChecksHeld = new Promise((resolve) => (answer = resolve));
    const checks = port.callsOf('runningTasksOf', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length === checks + 1, { description: 'the check' });
    // Started after the check read the machine's tasks: sent by its wake-up while the check waits.
    port.tasks.set(machineId, [task('new-1')]);
    await dispatched('d-3', 'new-1', machineId);
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the new task' });
    port.runningChecksHeld = null;
    answer();
    // The check answered without new-1. The same wake-up again, then a marker: a second new-1
    // would come before the marker.
    const answered = port.callsOf('runningTasksOf', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('runningTasksOf', machineId).length > answered, { description: 'the next check' });
    await dispatched('d-3', 'new-1', machineId);
    port.tasks.set(machineId, [task('new-1'), task('marker-3')]);
    await dispatched('d-4', 'marker-3', machineId);
    await waitFor(() => stream.of('runTask').some((r) => r.taskId === 'marker-3'), { description: 'the marker' });
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['new-1', 'marker-3']);
  });

  it('keeps a task sent while a full sync was reading: the sync may not show it yet, and it is not sent twice', async () => {
    const { machineId, stream } = await helloedAgent();
    let answer!: () => void;
    port.assignmentsHeld = new Promise((resolve) => (answer = resolve));
    // A task the call has not sent: the heartbeat's check asks for a full sync, held here.
    port.tasks.set(machineId, [task('lost-2')]);
    const syncs = port.callsOf('assignmentsFor', machineId).length;
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => port.callsOf('assignmentsFor', machineId).length === syncs + 1, { description: 'the sync' });
    // Started after the sync read the machine's tasks: sent by its wake-up while the sync waits.
    port.tasks.set(machineId, [task('lost-2'), task('new-2')]);
    await dispatched('d-5', 'new-2', machineId);
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the new task' });
    port.assignmentsHeld = null;
    answer();
    await waitFor(() => stream.of('runTask').length === 2, { description: 'the task the sync read' });
    // The sync answered without new-2. The same wake-up again, then a marker: a second new-2
    // would come before the marker.
    await dispatched('d-5', 'new-2', machineId);
    port.tasks.set(machineId, [task('lost-2'), task('new-2'), task('marker-5')]);
    await dispatched('d-6', 'marker-5', machineId);
    await waitFor(() => stream.of('runTask').some((r) => r.taskId === 'marker-5'), { description: 'the marker' });
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(['new-2', 'lost-2', 'marker-5']);
  });

  it('sends CancelTask when a task.cancel event names a connected machine', async () => {
    const { machineId, stream } = await helloedAgent();
    await bus.publishEvent(EventSubject.taskCancel('task-c'), {
      v: 1,
      type: 'task.cancel',
      taskId: 'task-c',
      deploymentId: 'd-1',
      machineId,
    });
    await waitFor(() => stream.of('cancelTask').length === 1, { description: 'CancelTask' });
    expect(stream.of('cancelTask')).toEqual([{ taskId: 'task-c', graceMs: 0 }]);
  });

  it("sends a cancel whose task.cancel event was lost at the agent's next Heartbeat, once per call", async () => {
    const { machineId, stream } = await helloedAgent();
    port.tasks.set(machineId, [task('keeps-running')]);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('runTask').length === 1, { description: 'the running task' });
    // Its deployment is cancelled, and the event never reaches this replica.
    port.tasks.set(machineId, []);
    port.cancellations.set(machineId, ['keeps-running']);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('cancelTask').length === 1, { description: 'CancelTask after a heartbeat' });
    // Still being cancelled at the next heartbeat, and the event arrives late: not sent again.
    await bus.publishEvent(EventSubject.taskCancel('keeps-running'), {
      v: 1,
      type: 'task.cancel',
      taskId: 'keeps-running',
      deploymentId: 'd-1',
      machineId,
    });
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    // A marker cancellation at the next sync: a second keeps-running cancel would come before it.
    port.cancellations.set(machineId, ['keeps-running', 'marker']);
    stream.send({ heartbeat: { sentUnixMs: Date.now() } });
    await waitFor(() => stream.of('cancelTask').some((c) => c.taskId === 'marker'), { description: 'the marker' });
    expect(stream.of('cancelTask')).toEqual([
      { taskId: 'keeps-running', graceMs: 0 },
      { taskId: 'marker', graceMs: 0 },
    ]);
  });

  it('stores a LogBatch through the engine and answers AckLogs with the stored seq', async () => {
    const { machineId, stream } = await helloedAgent();
    stream.send({
      logBatch: {
        taskId: 'task-l',
        lines: [
          { seq: 1, stream: 'STDOUT', text: 'hello', unixNanos: '1732270000000000001' },
          { seq: 2, stream: 'STDERR', text: 'warn', unixNanos: '1732270000000000002' },
          { seq: 3, stream: 'SYSTEM', text: 'exit 0', unixNanos: '1732270000000000003' },
        ],
      },
    });
    await waitFor(() => stream.of('ackLogs').length === 1, { description: 'AckLogs' });
    expect(stream.of('ackLogs')).toEqual([{ taskId: 'task-l', seq: '3' }]);
    // An agent before chunks (one LogLine per line): its lines reach the engine as one chunk.
    expect(port.callsOf('recordLogs', machineId)).toEqual([
      {
        method: 'recordLogs',
        machineId,
        taskId: 'task-l',
        chunks: [
          {
            firstSeq: 1,
            lineCount: 3,
            firstUnixNanos: '1732270000000000001',
            text: 'hello\nwarn\nexit 0\n',
            streams: Uint8Array.from([1, 2, 3]),
            timeDeltasNs: [1, 1],
          },
        ],
      },
    ]);
  });

  it('stores a LogBatch chunk as it came, checked, and answers AckLogs with its last seq', async () => {
    const { machineId, stream } = await helloedAgent();
    stream.send({
      logBatch: {
        taskId: 'task-c',
        chunk: {
          firstSeq: 5,
          count: 2,
          firstUnixNanos: '1732270000000000001',
          text: Buffer.from('five\nsix\n'),
          streams: Buffer.from([1, 2]),
          timeDeltas: Buffer.from([0x90, 0x4e]),
        },
      },
    });
    await waitFor(() => stream.of('ackLogs').length === 1, { description: 'AckLogs' });
    expect(stream.of('ackLogs')).toEqual([{ taskId: 'task-c', seq: '6' }]);
    expect(port.callsOf('recordLogs', machineId)[0]?.chunks[0]).toMatchObject({
      firstSeq: 5,
      lineCount: 2,
      text: 'five\nsix\n',
      timeDeltasNs: [10_000],
    });
  });

  it('hears the agent while a slow store holds its lines, and stores the batches queued meanwhile in one write', async () => {
    port.recordLogsDelayMs = 1_500;
    try {
      const { machineId, stream } = await helloedAgent();
      const batch = (seq: number) => ({
        logBatch: {
          taskId: 'task-slow',
          chunk: {
            firstSeq: seq,
            count: 1,
            firstUnixNanos: `${1732270000000000000n + BigInt(seq)}`,
            text: Buffer.from(`line ${seq}\n`),
            streams: Buffer.alloc(0),
            timeDeltas: Buffer.alloc(0),
          },
        },
      });
      for (let seq = 1; seq <= 5; seq++) stream.send(batch(seq));
      await waitFor(() => port.callsOf('heartbeat', machineId).length === 1, {
        description: 'heard at the first batch',
      });
      // A heartbeat interval later, still storing the first batch: a message counts when it
      // arrives, not when its turn comes (it used to wait behind the lines, and the agent was lost).
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      stream.send({ heartbeat: { sentUnixMs: Date.now() } });
      await waitFor(() => port.callsOf('heartbeat', machineId).length === 2, { description: 'heard again' });
      expect(stream.of('ackLogs')).toEqual([]);
      await waitFor(() => stream.of('ackLogs').length === 2, { timeoutMs: 10_000, description: 'two acks' });
      expect(stream.of('ackLogs')).toEqual([
        { taskId: 'task-slow', seq: '1' },
        { taskId: 'task-slow', seq: '5' },
      ]);
      expect(port.callsOf('recordLogs', machineId).map((c) => c.chunks.map((chunk) => chunk.firstSeq))).toEqual([
        [1],
        [2, 3, 4, 5],
      ]);
    } finally {
      port.recordLogsDelayMs = 0;
    }
  });

  it('holds a TaskResult back until the lines it covers are stored, then acks it', async () => {
    port.holdResultsForLines = true;
    try {
      const { machineId, stream } = await helloedAgent();
      stream.send({ taskResult: { taskId: 'task-w', outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 2 } });
      await waitFor(() => port.callsOf('recordResult', machineId).length === 1, { description: 'the result offered' });
      expect(stream.of('ackResult')).toEqual([]);
      stream.send({
        logBatch: {
          taskId: 'task-w',
          lines: [
            { seq: 1, stream: 'STDOUT', text: 'a', unixNanos: '1' },
            { seq: 2, stream: 'STDOUT', text: 'b', unixNanos: '2' },
          ],
        },
      });
      await waitFor(() => stream.of('ackResult').length === 1, { description: 'AckResult after the lines' });
      expect(stream.received.map((m) => m.payload).slice(-2)).toEqual(['ackLogs', 'ackResult']);
    } finally {
      port.holdResultsForLines = false;
    }
  });

  it('acks a TaskResult only after the engine recorded it', async () => {
    const { machineId, stream } = await helloedAgent();
    stream.send({ taskResult: { taskId: 'task-r', outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 12 } });
    await waitFor(() => stream.of('ackResult').length === 1, { description: 'AckResult' });
    expect(stream.of('ackResult')).toEqual([{ taskId: 'task-r' }]);
    expect(port.callsOf('recordResult', machineId)).toEqual([
      {
        method: 'recordResult',
        machineId,
        taskId: 'task-r',
        result: { outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: 12 },
      },
    ]);
  });

  it('ends the older call when the same machine connects again, and wakes only the new one', async () => {
    const { machineId, credential, stream: first } = await helloedAgent();
    const second = connect(machineId, credential);
    const status = await waitFor(() => first.status, { description: 'first call ended' });
    expect(status.code).toBe(grpc.status.CANCELLED);
    port.tasks.set(machineId, [task('after-replace')]);
    second.send({ hello: {} });
    await waitFor(() => second.of('runTask').length === 1, { description: 'task on the new call' });
    expect(first.of('runTask')).toEqual([]);
    expect(second.status).toBeNull();
    expect(gateway.connectedMachineIds().filter((id) => id === machineId)).toHaveLength(1);
  });

  it('ends only that agent call with UNAVAILABLE when the engine fails, and the agent can reconnect', async () => {
    const { machineId, credential, stream } = await helloedAgent();
    port.failNext.add(`recordLogs:${machineId}`);
    stream.send({ logBatch: { taskId: 'task-f', lines: [{ seq: 1, stream: 'STDOUT', text: 'x', unixNanos: '1' }] } });
    const status = await waitFor(() => stream.status, { description: 'call ended' });
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    expect(stream.of('ackLogs')).toEqual([]);
    await waitFor(() => !gateway.connectedMachineIds().includes(machineId), { description: 'session forgotten' });

    const again = connect(machineId, credential);
    again.send({ hello: {} });
    again.send({ logBatch: { taskId: 'task-f', lines: [{ seq: 1, stream: 'STDOUT', text: 'x', unixNanos: '1' }] } });
    await waitFor(() => again.of('ackLogs').length === 1, { description: 'AckLogs after reconnect' });
  });

  it('delivers every message when the writes outrun the agent (backpressure)', async () => {
    const machine = await registeredMachine();
    const big = 'x'.repeat(64 * 1024);
    port.tasks.set(
      machine.machineId,
      Array.from({ length: 120 }, (_, i) => task(`bulk-${i}`, { script: big })),
    );
    const stream = connect(machine.machineId, machine.credential);
    stream.send({ hello: {} });
    await waitFor(() => stream.of('runTask').length === 120, { timeoutMs: 15_000, description: '120 RunTask' });
    expect(stream.of('runTask').map((r) => r.taskId)).toEqual(Array.from({ length: 120 }, (_, i) => `bulk-${i}`));
    expect(stream.of('runTask').every((r) => r.script.length === big.length)).toBe(true);
  });
});
