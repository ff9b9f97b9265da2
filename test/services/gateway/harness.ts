/**
 * Test harness for the agent gateway: a fake AgentPort that records calls and returns canned
 * tasks, and a gRPC client built from the same .proto, as an agent would build it.
 */
import * as grpc from '@grpc/grpc-js';
import type {
  AgentInfo,
  AgentLogChunk,
  AgentPort,
  AgentUpgradeReport,
  AgentTaskResult,
  ResultReceipt,
  RunTaskPayload,
} from '../../../services/engine/agent-port.ts';
import type { Bus } from '../../../services/bus/index.ts';
import { createLogger } from '../../../services/core/index.ts';
import {
  createGateway,
  loadAgentProto,
  METADATA_AGENT_CREDENTIAL,
  METADATA_MACHINE_ID,
  type Gateway,
  type GatewayOptions,
} from '../../../services/gateway/index.ts';
import type { TestContext } from '../../helpers/app.ts';
import type { AgentServiceClient } from '../../../proto/gen/gantry/agent/v1/AgentService.ts';
import type { AgentMessage } from '../../../proto/gen/gantry/agent/v1/AgentMessage.ts';
import type { ServerMessage__Output } from '../../../proto/gen/gantry/agent/v1/ServerMessage.ts';
import type { RegisterRequest } from '../../../proto/gen/gantry/agent/v1/RegisterRequest.ts';
import type { RegisterResponse__Output } from '../../../proto/gen/gantry/agent/v1/RegisterResponse.ts';

export type PortCall =
  | { method: 'connected'; machineId: string; sessionId: string; info: AgentInfo }
  | { method: 'disconnected'; machineId: string; sessionId: string }
  | { method: 'heartbeat'; machineId: string }
  | { method: 'assignmentsFor'; machineId: string }
  | { method: 'runningTasksOf'; machineId: string }
  | { method: 'pendingUpgrade'; machineId: string }
  | { method: 'dispatchedTasks'; machineId: ''; taskIds: string[] }
  | { method: 'recordLogs'; machineId: string; taskId: string; chunks: readonly AgentLogChunk[] }
  | {
      method: 'recordResult';
      machineId: string;
      taskId: string;
      result: AgentTaskResult;
      options?: { force?: boolean };
    };

export class FakeAgentPort implements AgentPort {
  readonly calls: PortCall[] = [];
  readonly tasks = new Map<string, RunTaskPayload[]>();
  readonly cancellations = new Map<string, string[]>();
  /** Makes the next call of this method on this machine throw. */
  readonly failNext = new Set<string>();

  callsOf<M extends PortCall['method']>(method: M, machineId: string): Array<Extract<PortCall, { method: M }>> {
    return this.calls.filter(
      (c): c is Extract<PortCall, { method: M }> => c.method === method && c.machineId === machineId,
    );
  }

  #maybeFail(method: string, machineId: string): void {
    if (this.failNext.delete(`${method}:${machineId}`)) throw new Error(`fake ${method} failure`);
  }

  async connected(machineId: string, sessionId: string, info: AgentInfo): Promise<{ pendingUpgrade: string | null }> {
    this.calls.push({ method: 'connected', machineId, sessionId, info });
    this.#maybeFail('connected', machineId);
    return { pendingUpgrade: this.upgrades.get(machineId) ?? null };
  }

  /** Upgrades asked of machines (pendingUpgrade answers them) and the agents' reports. */
  readonly upgrades = new Map<string, string>();
  readonly upgradeReports: Array<{ machineId: string; report: AgentUpgradeReport }> = [];

  async pendingUpgrade(machineId: string): Promise<string | null> {
    this.calls.push({ method: 'pendingUpgrade', machineId });
    return this.upgrades.get(machineId) ?? null;
  }

  /** As the engine does: a report settles the request (it is not sent again). */
  async upgradeReported(machineId: string, report: AgentUpgradeReport): Promise<void> {
    this.upgradeReports.push({ machineId, report });
    if (this.upgrades.get(machineId) === report.version) this.upgrades.delete(machineId);
  }

  async disconnected(machineId: string, sessionId: string): Promise<void> {
    this.calls.push({ method: 'disconnected', machineId, sessionId });
  }

  async heartbeat(machineId: string): Promise<void> {
    this.calls.push({ method: 'heartbeat', machineId });
    this.#maybeFail('heartbeat', machineId);
  }

  /** While set, a running-tasks check answers what was running when it was asked, once this settles (a read that took long). */
  runningChecksHeld: Promise<void> | null = null;

  async runningTasksOf(machineId: string): Promise<Array<{ taskId: string; cancelling: boolean }>> {
    this.calls.push({ method: 'runningTasksOf', machineId });
    this.#maybeFail('runningTasksOf', machineId);
    const running = [
      ...(this.tasks.get(machineId) ?? []).map((task) => ({ taskId: task.taskId, cancelling: false })),
      ...(this.cancellations.get(machineId) ?? []).map((taskId) => ({ taskId, cancelling: true })),
    ];
    if (this.runningChecksHeld) await this.runningChecksHeld;
    return running;
  }

  /** While set, a full sync's read answers what was assigned when it was asked, once this settles. */
  assignmentsHeld: Promise<void> | null = null;

  async assignmentsFor(machineId: string): Promise<{ run: RunTaskPayload[]; cancel: string[] }> {
    this.calls.push({ method: 'assignmentsFor', machineId });
    this.#maybeFail('assignmentsFor', machineId);
    const assigned = { run: this.tasks.get(machineId) ?? [], cancel: this.cancellations.get(machineId) ?? [] };
    if (this.assignmentsHeld) await this.assignmentsHeld;
    return assigned;
  }

  async dispatchedTasks(taskIds: readonly string[]): Promise<Array<{ machineId: string; payload: RunTaskPayload }>> {
    this.calls.push({ method: 'dispatchedTasks', machineId: '', taskIds: [...taskIds] });
    this.#maybeFail('dispatchedTasks', '');
    return [...this.tasks].flatMap(([machineId, tasks]) =>
      tasks.filter((t) => taskIds.includes(t.taskId)).map((payload) => ({ machineId, payload })),
    );
  }

  /** Package versions (`id@version`) mayDownload refuses; every other one is allowed. */
  readonly refusedDownloads = new Set<string>();

  async mayDownload(machineId: string, packageId: string, version: string): Promise<boolean> {
    return !this.refusedDownloads.has(`${packageId}@${version}`);
  }

  /** Lines of a task stored so far (what recordLogs was given), by task. */
  readonly storedSeq = new Map<string, number>();
  /** Each recordLogs takes this long (a slow store). */
  recordLogsDelayMs = 0;
  /** recordResult answers 'waiting-for-lines' while fewer lines than the result covers are stored. */
  holdResultsForLines = false;

  async recordLogs(machineId: string, taskId: string, chunks: readonly AgentLogChunk[]): Promise<number> {
    this.calls.push({ method: 'recordLogs', machineId, taskId, chunks });
    this.#maybeFail('recordLogs', machineId);
    if (this.recordLogsDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.recordLogsDelayMs));
    const chunk = chunks.at(-1)!;
    const last = Math.max(this.storedSeq.get(taskId) ?? 0, chunk.firstSeq + chunk.lineCount - 1);
    this.storedSeq.set(taskId, last);
    return last;
  }

  async recordResult(
    machineId: string,
    taskId: string,
    result: AgentTaskResult,
    options?: { force?: boolean },
  ): Promise<ResultReceipt> {
    this.calls.push({ method: 'recordResult', machineId, taskId, result, ...(options?.force ? { options } : {}) });
    this.#maybeFail('recordResult', machineId);
    if (this.holdResultsForLines && !options?.force && (this.storedSeq.get(taskId) ?? 0) < result.lastLogSeq)
      return 'waiting-for-lines';
    return 'recorded';
  }

  /** The lines recordLogs was given for a machine, as seq:text. */
  linesOf(machineId: string): string[] {
    return this.callsOf('recordLogs', machineId).flatMap(({ chunks }) =>
      chunks.flatMap((chunk) =>
        chunk.text
          .split('\n')
          .slice(0, chunk.lineCount)
          .map((text, i) => `${chunk.firstSeq + i}:${text}`),
      ),
    );
  }
}

export function task(taskId: string, extra: Partial<RunTaskPayload> = {}): RunTaskPayload {
  return {
    taskId,
    deploymentId: 'deployment-1',
    stepName: 'Step 1',
    script: 'echo hello',
    scriptLanguage: 'bash',
    env: { Greeting: 'hi' },
    sensitiveValues: [],
    packages: [],
    redownloadPackages: false,
    timeoutSeconds: 0,
    packageFolderToken: '',
    ...extra,
  };
}

export function agentClient(port: number): AgentServiceClient {
  const AgentService = loadAgentProto().gantry.agent.v1.AgentService;
  return new AgentService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
}

export function agentMetadata(machineId: string, credential: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set(METADATA_MACHINE_ID, machineId);
  metadata.set(METADATA_AGENT_CREDENTIAL, credential);
  return metadata;
}

export function register(client: AgentServiceClient, request: RegisterRequest): Promise<RegisterResponse__Output> {
  return new Promise((resolve, reject) =>
    client.Register(request, (error, response) =>
      error || !response ? reject(error ?? new Error('Register returned nothing')) : resolve(response),
    ),
  );
}

/** An open Connect call that records everything the server sends and how the call ended. */
export interface AgentStream {
  received: ServerMessage__Output[];
  status: grpc.StatusObject | null;
  send(message: AgentMessage): void;
  /** Messages of one kind, e.g. of('runTask'). */
  of<K extends NonNullable<ServerMessage__Output['payload']>>(kind: K): Array<NonNullable<ServerMessage__Output[K]>>;
  close(): void;
}

export function openStream(client: AgentServiceClient, metadata: grpc.Metadata): AgentStream {
  const call = client.Connect(metadata);
  const stream: AgentStream = {
    received: [],
    status: null,
    send: (message) => void call.write(message),
    of: (kind) => stream.received.filter((m) => m.payload === kind).map((m) => m[kind]!),
    close: () => call.cancel(),
  };
  call.on('data', (message: ServerMessage__Output) => stream.received.push(message));
  call.on('status', (status: grpc.StatusObject) => (stream.status = status));
  // The 'status' event carries the outcome; an 'error' without a listener would crash the test.
  call.on('error', () => {});
  return stream;
}

/** Calls to the unary/streaming RPCs reject with a ServiceError; this extracts its code. */
export async function codeOf(promise: Promise<unknown>): Promise<grpc.status | 'ok'> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return (error as grpc.ServiceError).code;
  }
}

/** A gateway on the test app's store and clock, logging nothing, with the options a test sets. */
export function testGateway(
  t: TestContext,
  bus: Bus,
  agentPort: AgentPort,
  options: Pick<GatewayOptions, 'heartbeat'> & Partial<GatewayOptions>,
): Gateway {
  return createGateway({
    store: t.deps.store,
    clock: t.deps.clock,
    bus,
    agentPort,
    logger: createLogger('silent'),
    ...options,
  });
}
