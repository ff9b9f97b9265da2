// The agent gateway: the control plane's gRPC server for agents (proto/gantry/agent/v1). It
// authenticates agents, holds their Connect calls on this replica, forwards bus wake-ups to them
// and hands everything they report to the engine through the AgentPort. It decides nothing.
import * as grpc from '@grpc/grpc-js';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { toError, type Clock, type Logger } from '../core/index.ts';
import { EventSubject, isMessageEnvelope, type Bus, type EventMessage, type Subscription } from '../bus/index.ts';
import type { AgentPort } from '../engine/index.ts';
import { authenticateAgent, batchedCredentials, registerAgent, type Enroll, type GatewayStore } from './agent-auth.ts';
import { AgentSession, type AgentBundle, type AgentCall } from './agent-session.ts';
import { grpcStatus, toGrpcStatus } from './grpc-errors.ts';
import {
  DownloadSlots,
  streamBytes,
  streamPackage,
  type BundleDownloadCall,
  type DownloadCall,
  type PackageSource,
} from './package-download.ts';
import { guardedDecoder } from './message-guard.ts';
import { ConnectionWatch, type Watched } from './connection-watch.ts';
import { loadAgentProto, type AgentServiceHandlers } from './proto.ts';
import { fixedHeartbeatPace, heartbeatIntervalOf, type HeartbeatPace } from './heartbeat-pace.ts';

export interface GatewayOptions {
  store: GatewayStore;
  clock: Clock;
  bus: Bus;
  agentPort: AgentPort;
  /** Package bytes for DownloadPackage; without it that call answers UNIMPLEMENTED. */
  packages?: PackageSource | null;
  logger: Logger;
  /** PEM server certificate chain and key; null or absent serves without TLS (local and test setups). */
  tls?: { cert: string | Buffer; key: string | Buffer } | null;
  /**
   * How often agents send Heartbeat: a fixed interval (Welcome's), or a pace whose interval grows
   * with the agents connected here (heartbeat-pace.ts; HeartbeatPace tells connected agents).
   */
  heartbeat: number | HeartbeatPace;
  /** Redeems a fleet's enrollment key (domain/enrollment-keys.ts); without it such a Register is refused. */
  enroll?: Enroll;
  /** The agent bundle this control plane ships, for upgrades (UpgradeAgent, DownloadAgentBundle); null: none. */
  agentBundle?: AgentBundle | null;
  /** When a silent connection is pinged, and how soon it must answer (default LIVENESS; tests use less). */
  liveness?: { silentMs: number; answerWithinMs: number };
}

export interface Gateway {
  /** Subscribes to the bus, then binds; resolves with the bound port (useful with port 0). */
  start(port: number, host: string): Promise<number>;
  /** Ends every agent call (agents reconnect to another replica) and stops the server. */
  stop(): Promise<void>;
  /** Machine IDs whose agents are connected to this replica. */
  connectedMachineIds(): string[];
  /** The heartbeat interval agents connecting now are told (heartbeat-pace.ts). */
  heartbeatIntervalMs(): number;
}

// Dead agents (a cut link, a vanished NAT entry, a powered-off host) are found within ~15 s even
// when no message flows, so the machine reads Offline and its deployments say so well within 30 s
// (test/system/network-cut.system.ts): HTTP/2 pings, sent only to connections silent for
// LIVENESS.silentMs (connection-watch.ts), not grpc-js's keepalive, which pings every connection on
// a fixed timer. silentMs is below the 15 s heartbeat interval, so a healthy agent is still pinged
// once per beat; pinging only past the interval found no measurable saving at 10,000 agents and
// would find a dead one up to 23 s late (bench/README, nineteenth session). Above the replica's
// heartbeat cap the agents beat less often (heartbeat-pace.ts), and the pings come that much
// later: still one per beat, and a dead agent found within about one interval (at most 30 s). A
// connection that carries no call at all is closed after CALL_LESS_IDLE_MS (nothing pings it);
// grpc-js servers never penalise agent pings.
// What one connection may cost is bounded too (agents are less trusted than the control plane):
// 100 streams (an agent holds one Connect call and a few downloads; a load generator or a proxy
// may carry many agents over one connection), 16 MB of HTTP/2 session
// memory (grpc-js lifts Node's 10 MB default to unlimited unless this is set), and messages of
// at most 2 MiB (a log chunk holds at most 1 MiB of text; agents send 64 KiB).
// No channelz (grpc-js's introspection service, on by default; nothing here serves it): with it
// every connection registers a socket entry, call trackers and trace lines, and every message
// updates counters and timestamps — memory and CPU per agent for data nobody reads.
export const MAX_RECEIVE_BYTES = 2 * 1024 * 1024;
const CALL_LESS_IDLE_MS = 60_000;
export const LIVENESS = { silentMs: 9_000, answerWithinMs: 5_000 };
export const SERVER_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.enable_channelz': 0,
  'grpc.max_connection_idle_ms': CALL_LESS_IDLE_MS,
  'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
  'grpc.max_concurrent_streams': 100,
  'grpc-node.max_session_memory': 16,
};
/** Concurrent DownloadPackage calls per machine (more are refused) and per gateway (more wait). */
const DOWNLOADS_PER_MACHINE = 4;
const DOWNLOADS_PER_GATEWAY = 64;
const STOP_GRACE_MS = 5_000;
/**
 * Connections the kernel may hold for the gateway before it accepts them (capped by the kernel at
 * net.core.somaxconn). grpc-js listens with Node's default of 511, and a fleet reconnecting at once
 * overflowed that on a busy event loop: the kernel dropped the rest, and agents waited out SYN
 * retransmits and their backoff (27,007 failed attempts for 10,000 agents in one bench/fleet storm;
 * TcpExtListenOverflows). So the gateway listens itself and hands each socket to grpc-js.
 */
export const ACCEPT_BACKLOG = 8_192;

export function createGateway(options: GatewayOptions): Gateway {
  const logger = options.logger.child({ component: 'gateway' });
  const sessions = new Map<string, AgentSession>();
  const subscriptions: Subscription[] = [];
  const downloads = new DownloadSlots({ perMachine: DOWNLOADS_PER_MACHINE, total: DOWNLOADS_PER_GATEWAY });
  const pace = typeof options.heartbeat === 'number' ? fixedHeartbeatPace(options.heartbeat) : options.heartbeat;
  const currentHeartbeatMs = (): number => heartbeatIntervalOf(pace, sessions.size);
  const connections = new ConnectionWatch({
    ...(options.liveness ?? LIVENESS),
    heartbeatIntervalMs: pace.maxMs,
    beatsLaterByMs: () => currentHeartbeatMs() - pace.baseMs,
    onDead: (peer) => logger.warn({ peer }, 'agent connection ended: silent, and no answer to a ping'),
  });
  let server: { instance: grpc.Server; accepting: net.Server } | null = null;
  const identity = batchedCredentials(options.store);

  /** Watches a download's connection (ended with UNAVAILABLE when out of reach). */
  const watchDownload = (call: DownloadCall | BundleDownloadCall): Watched =>
    connections.watch(call, () =>
      call.emit('error', grpcStatus(grpc.status.UNAVAILABLE, 'The connection stopped answering')),
    );

  function adopt(session: AgentSession): void {
    const previous = sessions.get(session.machineId);
    sessions.set(session.machineId, session);
    // One call per machine: the newer one wins (the agent restarted or its old connection is half dead).
    previous?.close(grpcStatus(grpc.status.CANCELLED, 'Replaced by a newer connection of this machine'));
  }

  /** Ends of sessions still being recorded: stop() waits for them. */
  const ending = new Set<Promise<void>>();

  function forget(session: AgentSession): void {
    if (sessions.get(session.machineId) === session) sessions.delete(session.machineId);
    const ended = session.ended;
    ending.add(ended);
    void ended.finally(() => ending.delete(ended));
  }

  /** Tasks just started: the ones for agents held here are read together and sent. */
  function onTasksDispatched(message: EventMessage): void {
    if (!isMessageEnvelope(message) || message.type !== 'tasks.dispatched') return;
    const here = message.tasks.filter(({ machineId }) => sessions.get(machineId)?.isReady);
    if (here.length === 0) return;
    options.agentPort.dispatchedTasks(here.map(({ taskId }) => taskId)).then(
      (dispatched) => {
        for (const { machineId, payload } of dispatched) sessions.get(machineId)?.offerTask(payload);
      },
      // The agents are not lost: each re-reads its tasks at its next heartbeat.
      (error: unknown) =>
        logger.error({ err: toError(error), deploymentId: message.deploymentId }, 'reading dispatched tasks failed'),
    );
  }

  /** Machines asked to upgrade: the sessions held here read their request and send UpgradeAgent. */
  function onAgentUpgrade(message: EventMessage): void {
    if (!isMessageEnvelope(message) || message.type !== 'agents.upgrade') return;
    for (const machineId of message.machineIds) sessions.get(machineId)?.offerUpgrade();
  }

  function onTaskCancel(message: EventMessage): void {
    if (!isMessageEnvelope(message) || message.type !== 'task.cancel') return;
    sessions.get(message.machineId)?.cancelTask(message.taskId);
  }

  const handlers: AgentServiceHandlers = {
    Register(call, callback) {
      registerAgent(options.store, options.clock, call.request, options.enroll).then(
        (response) => {
          logger.info({ machineId: response.machineId }, 'agent registered');
          callback(null, response);
        },
        (error: unknown) => {
          const status = toGrpcStatus(error);
          if (status.code === grpc.status.UNAUTHENTICATED)
            logger.warn({ peer: call.getPeer() }, 'agent registration refused');
          else logger.error({ err: toError(error) }, 'agent registration failed');
          callback(status);
        },
      );
    },

    Connect(call: AgentCall) {
      // Watched from the start: a connection that dies during authentication is found too.
      let session: AgentSession | null = null;
      const watched = connections.watch(call, () =>
        session
          ? session.close(grpcStatus(grpc.status.UNAVAILABLE, 'The connection stopped answering; reconnect'))
          : call.emit('error', grpcStatus(grpc.status.UNAVAILABLE, 'The connection stopped answering')),
      );
      authenticateAgent(identity, call.metadata).then(
        (machine) => {
          if (call.cancelled) return;
          session = new AgentSession({
            call,
            machineId: machine.id,
            agentPort: options.agentPort,
            logger: logger.child({ machineId: machine.id }),
            heartbeat: { baseMs: pace.baseMs, current: currentHeartbeatMs },
            onClosed: forget,
            agentBundle: options.agentBundle ?? null,
            onHeard: () => watched.heard(),
          });
          adopt(session);
          session.start();
          logger.info({ machineId: machine.id }, 'agent connected');
        },
        (error: unknown) => {
          const status = toGrpcStatus(error);
          if (status.code === grpc.status.UNAUTHENTICATED)
            logger.warn({ peer: call.getPeer() }, 'agent connection refused');
          else logger.error({ err: toError(error) }, 'agent authentication failed');
          call.emit('error', status);
        },
      );
    },

    DownloadPackage(call: DownloadCall) {
      watchDownload(call);
      authenticateAgent(identity, call.metadata)
        .then(async (machine) => {
          const { packageId, version } = call.request;
          // The slot first: a flood of calls is turned away before it costs a query each.
          const release = await downloads.acquire(machine.id, call);
          try {
            // Only what a task of this machine is running now: a credential reaches no other package.
            if (options.packages && !(await options.agentPort.mayDownload(machine.id, packageId, version))) {
              logger.warn(
                { machineId: machine.id, packageId, version },
                'package download refused: no task of this machine uses it',
              );
              throw grpcStatus(
                grpc.status.NOT_FOUND,
                `No task dispatched to this machine uses package ${packageId} version ${version}`,
              );
            }
            await streamPackage(options.packages, machine.workspaceId, call, logger.child({ machineId: machine.id }));
          } finally {
            release();
          }
        })
        .catch((error: unknown) => {
          const status = toGrpcStatus(error);
          if (status.code === grpc.status.UNAVAILABLE) logger.error({ err: toError(error) }, 'package download failed');
          call.emit('error', status);
        });
    },

    /** The bundle an UpgradeAgent named: the same bytes (and sha256) GET /api/agent/bundle serves. */
    DownloadAgentBundle(call: BundleDownloadCall) {
      watchDownload(call);
      authenticateAgent(identity, call.metadata)
        .then(async (machine) => {
          const bundle = options.agentBundle;
          if (!bundle || call.request.version !== bundle.version)
            throw grpcStatus(
              grpc.status.NOT_FOUND,
              bundle
                ? `This control plane ships agent ${bundle.version}, not ${call.request.version}`
                : 'This control plane ships no agent bundle',
            );
          const release = await downloads.acquire(machine.id, call as unknown as DownloadCall);
          try {
            logger.info({ machineId: machine.id, version: bundle.version }, 'agent bundle download');
            await streamBytes(bundle.bytes, call);
          } finally {
            release();
          }
        })
        .catch((error: unknown) => call.emit('error', toGrpcStatus(error)));
    },
  };

  return {
    async start(port, host) {
      if (server) throw new Error('The gateway is already started');
      subscriptions.push(await options.bus.subscribeEvents(EventSubject.allTasksDispatched, onTasksDispatched));
      subscriptions.push(await options.bus.subscribeEvents(EventSubject.allTaskCancels, onTaskCancel));
      subscriptions.push(await options.bus.subscribeEvents(EventSubject.agentUpgrades, onAgentUpgrade));
      const instance = new grpc.Server(SERVER_CHANNEL_OPTIONS);
      const service = loadAgentProto().gantry.agent.v1.AgentService.service;
      // Connect messages are counted before they are decoded (message-guard.ts).
      const connect = { ...service.Connect, requestDeserialize: guardedDecoder(service.Connect.requestDeserialize) };
      instance.addService({ ...service, Connect: connect }, handlers);
      const credentials = options.tls
        ? grpc.ServerCredentials.createSsl(
            null,
            [{ cert_chain: Buffer.from(options.tls.cert), private_key: Buffer.from(options.tls.key) }],
            false,
          )
        : grpc.ServerCredentials.createInsecure();
      const injector = instance.createConnectionInjector(credentials);
      const accepting = net.createServer((socket) => injector.injectConnection(socket));
      const bound = await new Promise<number>((resolve, reject) => {
        accepting.once('error', reject);
        accepting.listen({ host, port, backlog: ACCEPT_BACKLOG }, () => {
          accepting.off('error', reject);
          resolve((accepting.address() as net.AddressInfo).port);
        });
      });
      accepting.on('error', (error) => logger.error({ err: error }, 'the agent gateway listener failed'));
      server = { instance, accepting };
      connections.start();
      logger.info({ host, port: bound, tls: Boolean(options.tls) }, 'agent gateway listening');
      return bound;
    },

    async stop() {
      connections.stop();
      await Promise.all(subscriptions.splice(0).map((s) => s.close()));
      for (const session of [...sessions.values()]) {
        session.close(grpcStatus(grpc.status.UNAVAILABLE, 'The control plane is shutting down; reconnect'));
      }
      sessions.clear();
      const instance = server?.instance;
      // No new connections; those open are ended below.
      server?.accepting.close();
      server = null;
      if (instance) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => {
            instance.forceShutdown();
            resolve();
          }, STOP_GRACE_MS);
          timer.unref();
          instance.tryShutdown(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      // The sessions' ends recorded while the database is still there (bounded: a stuck write
      // must not hold the stop).
      const grace = new AbortController();
      await Promise.race([
        Promise.all(ending),
        delay(STOP_GRACE_MS, undefined, { signal: grace.signal, ref: false }).catch(() => undefined),
      ]);
      grace.abort();
    },

    connectedMachineIds: () => [...sessions.keys()],
    heartbeatIntervalMs: currentHeartbeatMs,
  };
}
