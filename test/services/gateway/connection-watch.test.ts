/**
 * Dead agent connections are found by pinging only silent ones (services/gateway/connection-watch.ts):
 * through a TCP relay that can black-hole both directions (a cut link: no FIN, no RST), a
 * connection that stops answering is ended and the machine recorded disconnected, while a silent
 * connection that still answers its pings is left alone. The gateway's heartbeat interval here is a
 * minute, so only the ping (which needs the call's HTTP/2 session, read from grpc-js internals)
 * can find the cut in time: a grpc-js upgrade that hides the session fails this file.
 */
import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../../services/bus/index.ts';
import { createLogger } from '../../../services/core/index.ts';
import type { Gateway } from '../../../services/gateway/index.ts';
import { http2SessionOf } from '../../../services/gateway/connection-watch.ts';
import type { AgentServiceClient } from '../../../proto/gen/gantry/agent/v1/AgentService.ts';
import { testApp, type TestContext } from '../../helpers/app.ts';
import { waitFor } from '../../helpers/wait-for.ts';
import {
  agentClient,
  agentMetadata,
  FakeAgentPort,
  openStream,
  register,
  type AgentStream,
  testGateway,
} from './harness.ts';

const SILENT_MS = 300;
const ANSWER_WITHIN_MS = 300;

/** A TCP relay to `port` whose links can be cut (data in both directions dropped, sockets kept open). */
async function relay(port: number) {
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((down) => {
    const up = net.connect(port, '127.0.0.1');
    sockets.add(down).add(up);
    down.on('data', (data) => void (cut || up.write(data)));
    up.on('data', (data) => void (cut || down.write(data)));
    const end = () => {
      down.destroy();
      up.destroy();
    };
    down.on('error', end).on('close', end);
    up.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => void (cut = true),
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

let t: TestContext;
let bus: Bus;
let gateway: Gateway;
let gatewayPort: number;
const port = new FakeAgentPort();
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  t = await testApp();
  const logger = createLogger('silent');
  bus = await createBus({ natsUrl: null, logger });
  gateway = testGateway(t, bus, port, {
    heartbeat: 60_000,
    liveness: { silentMs: SILENT_MS, answerWithinMs: ANSWER_WITHIN_MS },
  });
  gatewayPort = await gateway.start(0, '127.0.0.1');
});

afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

afterAll(async () => {
  await gateway?.stop();
  await bus?.close();
});

/** A machine whose agent connected through its own relay and said Hello. */
async function agentThroughRelay(
  toPort = gatewayPort,
): Promise<{ machineId: string; stream: AgentStream; cut: () => void }> {
  const link = await relay(toPort);
  const client: AgentServiceClient = agentClient(link.port);
  cleanups.push(() => client.close(), link.close);
  const created = await t.admin.post('/api/machine', { workspaceId: t.mainWorkspaceId, name: `w-${Date.now()}` });
  const registered = await register(client, {
    registrationToken: created.body.registrationToken as string,
    hostname: 'host-1',
    os: 'linux x64',
    agentVersion: '1.0.0',
  });
  const stream = openStream(client, agentMetadata(registered.machineId, registered.agentCredential));
  cleanups.push(() => stream.close());
  stream.send({ hello: { agentVersion: '1.0.0', os: 'linux x64', hostname: 'host-1' } });
  await waitFor(() => port.callsOf('connected', registered.machineId).length > 0, { description: 'Hello handled' });
  return { machineId: registered.machineId, stream, cut: link.cut };
}

/** Cuts the link, and answers how long until the machine's session was recorded ended. */
async function msUntilEnded(machineId: string, cut: () => void): Promise<number> {
  const cutAt = Date.now();
  cut();
  await waitFor(() => port.callsOf('disconnected', machineId).length > 0, {
    timeoutMs: 10_000,
    intervalMs: 20,
    description: 'the cut connection ended',
  });
  return Date.now() - cutAt;
}

describe('connection liveness', () => {
  it('ends a connection that stops answering, within silence + sweep + answer time', async () => {
    const { machineId, cut } = await agentThroughRelay();
    // Silent for a while first: the pings of a healthy connection are answered.
    await new Promise((resolve) => setTimeout(resolve, SILENT_MS * 4));
    expect(port.callsOf('disconnected', machineId)).toHaveLength(0);
    const tookMs = await msUntilEnded(machineId, cut);
    // Silence (≤ 300 ms) + sweep (75 ms) + answer (300 ms), with room for a loaded machine.
    expect(tookMs).toBeLessThan(3_000);
  });

  it('leaves a silent connection that answers its pings alone', async () => {
    const { machineId } = await agentThroughRelay();
    await new Promise((resolve) => setTimeout(resolve, (SILENT_MS + ANSWER_WITHIN_MS) * 5));
    expect(port.callsOf('disconnected', machineId)).toHaveLength(0);
    expect(gateway.connectedMachineIds()).toContain(machineId);
  });

  it('pings later when the agents beat less often than the base interval (above the heartbeat cap)', async () => {
    // One agent at one heartbeat a second: told 1,000 ms, 900 ms more than the base, so a
    // connection is pinged after 300 + 900 ms of silence (and found dead ~300 ms later), not 300.
    const paced = testGateway(t, bus, port, {
      heartbeat: { baseMs: 100, maxMs: 5_000, perSecond: 1 },
      liveness: { silentMs: SILENT_MS, answerWithinMs: ANSWER_WITHIN_MS },
    });
    cleanups.push(() => void paced.stop());
    const { machineId, stream, cut } = await agentThroughRelay(await paced.start(0, '127.0.0.1'));
    const [welcome] = await waitFor(() => (stream.of('welcome').length > 0 ? stream.of('welcome') : null));
    expect(welcome?.heartbeatIntervalMs).toBe(1_000);
    const tookMs = await msUntilEnded(machineId, cut);
    expect(tookMs).toBeGreaterThanOrEqual(SILENT_MS + 900 + ANSWER_WITHIN_MS - 100);
    expect(tookMs).toBeLessThan(5_000);
  });

  it('finds no session in what is not a grpc-js server call', () => {
    expect(http2SessionOf({})).toBeNull();
    expect(http2SessionOf(null)).toBeNull();
    expect(http2SessionOf({ call: { nextCall: { stream: {} } } })).toBeNull();
  });
});
