/**
 * Simulated agents for bench/fleet: each speaks agent.proto through the agent's own session code
 * (agent/connection's AgentConnection: Hello, heartbeats with a random phase, reconnects with
 * backoff), each on a gRPC connection of its own (`grpc.use_local_subchannel_pool`: grpc-js
 * otherwise shares one connection per address), and runs nothing: a RunTask is answered at once
 * with TaskAccepted and a SUCCEEDED TaskResult (after `taskMs`, when given: a task that takes
 * between its two bounds, uniformly), which is kept and re-sent in Hello until acknowledged, as the agent keeps it.
 *
 * Forked by bench/fleet/fleet.ts with an IPC channel. Argument: a JSON file
 * { server, caFile, agents: [{ machineId, credential, name }], taskMs? }. Sends { type: 'welcomed', count }
 * as sessions open; answers { type: 'report' } with every RunTask's arrival and result times, the
 * heartbeats sent so far, and why sessions ended or could not start (counted by reason).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import {
  AgentConnection,
  hostCheckedCredentials,
  type AgentLink,
  type HelloState,
  type ServerMessage,
  type SessionHandler,
  type TaskResult,
} from '../../agent/connection/index.ts';

interface SimConfig {
  server: string;
  caFile: string;
  agents: Array<{ machineId: string; credential: string; name: string }>;
  /** How long each task takes before its result is sent, [min, max] ms uniformly (default: at once). */
  taskMs?: [number, number];
  /** gRPC channel options on top of the agent's own. */
  channelOptions?: Record<string, number>;
}

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as SimConfig;
const now = () => performance.timeOrigin + performance.now();
const [TASK_MIN_MS, TASK_MAX_MS] = config.taskMs ?? [0, 0];
/**
 * Why sessions ended or could not start, counted (the agent's code logs each at warn with its
 * reason; the server's address is left out so that the same reason counts once).
 */
const endReasons: Record<string, number> = {};
const logger = pino(
  { level: 'warn' },
  {
    write(line: string) {
      const { reason } = JSON.parse(line) as { reason?: unknown };
      if (typeof reason !== 'string') return;
      const key = reason.replaceAll(config.server, 'SERVER').slice(0, 120);
      endReasons[key] = (endReasons[key] ?? 0) + 1;
    },
  },
);
// As the agent with GANTRY_AGENT_CA_FILE trusts the control plane (the server's IP checked against its certificate).
const credentials = hostCheckedCredentials(readFileSync(config.caFile));

/** [agent index, RunTask arrival (ms, epoch), result written (ms, epoch)] per RunTask received. */
const runs: Array<[number, number, number]> = [];
let welcomed = 0;
let sessionsEnded = 0;
let repeatedRunTasks = 0;
/** The agent's code reads health() for each Hello and each Heartbeat: heartbeats sent = reads − Hellos. */
let healthReads = 0;
let hellos = 0;

class NoopAgent implements SessionHandler {
  link: AgentLink | null = null;
  readonly #unacknowledged = new Map<string, TaskResult>();
  readonly #seen = new Set<string>();
  #everWelcomed = false;
  readonly index: number;
  constructor(index: number) {
    this.index = index;
  }

  hello(): HelloState {
    hellos++;
    return { runningTaskIds: [], unacknowledgedResults: [...this.#unacknowledged.values()] };
  }
  onWelcome(): void {
    if (!this.#everWelcomed) welcomed++;
    this.#everWelcomed = true;
  }
  onWritable(): void {}
  onDisconnected(): void {
    sessionsEnded++;
  }
  onMessage(message: ServerMessage): void {
    const link = this.link!;
    if (message.runTask) {
      const at = now();
      const { taskId } = message.runTask;
      if (this.#seen.has(taskId)) {
        // As the agent does: a task it already finished is answered with its result again.
        repeatedRunTasks++;
        const known = this.#unacknowledged.get(taskId);
        link.trySend(known ? { taskResult: known } : { taskAccepted: { taskId } });
        return;
      }
      this.#seen.add(taskId);
      link.trySend({ taskAccepted: { taskId } });
      const finish = () => {
        const result: TaskResult = { taskId, outcome: 'SUCCEEDED', exitCode: 0, message: '', lastLogSeq: '0' };
        this.#unacknowledged.set(taskId, result);
        link.trySend({ taskResult: result });
        runs.push([this.index, at, now()]);
      };
      const taskMs = TASK_MIN_MS + Math.random() * (TASK_MAX_MS - TASK_MIN_MS);
      if (taskMs > 0) setTimeout(finish, taskMs);
      else finish();
    } else if (message.ackResult) {
      this.#unacknowledged.delete(message.ackResult.taskId);
    }
  }
}

const connections: AgentConnection[] = [];
config.agents.forEach((agent, index) => {
  const handler = new NoopAgent(index);
  const connection = new AgentConnection({
    servers: [config.server],
    credentials,
    identity: { machineId: agent.machineId, credential: agent.credential },
    info: { agentVersion: 'bench-sim', os: 'linux x64', hostname: agent.name },
    health: () => {
      healthReads++;
      return { interpreters: ['bash'], homeFreeBytes: '10000000000' };
    },
    handler,
    logger,
    channelOptions: { ...config.channelOptions, 'grpc.use_local_subchannel_pool': 1 },
  });
  handler.link = connection;
  connections.push(connection);
  connection.start();
});

let reported = -1;
const tick = setInterval(() => {
  if (welcomed !== reported) {
    reported = welcomed;
    process.send?.({ type: 'welcomed', count: welcomed, at: now() });
  }
}, 100);

// The bench is gone (killed before it could say stop): its thousands of connections must not go on.
process.once('disconnect', () => process.exit(0));
process.on('message', (message: { type: string }) => {
  if (message.type === 'report') {
    const heartbeats = healthReads - hellos;
    process.send?.({ type: 'report', runs, sessionsEnded, endReasons, repeatedRunTasks, welcomed, heartbeats });
  } else if (message.type === 'stop') {
    clearInterval(tick);
    void Promise.all(connections.map((c) => c.stop())).then(() => process.exit(0));
  }
});
