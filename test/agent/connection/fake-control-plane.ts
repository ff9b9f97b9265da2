// A tiny in-test control plane implementing agent.proto on an ephemeral loopback port.
import * as grpc from '@grpc/grpc-js';
import { loadAgentProto, METADATA_AGENT_CREDENTIAL, METADATA_MACHINE_ID } from '../../../agent/connection/proto.ts';
import type { AgentMessage__Output } from '../../../proto/gen/gantry/agent/v1/AgentMessage.ts';
import type { ServerMessage } from '../../../proto/gen/gantry/agent/v1/ServerMessage.ts';

type Session = grpc.ServerDuplexStream<AgentMessage__Output, ServerMessage>;

export class FakeControlPlane {
  readonly server = new grpc.Server();
  port = 0;
  /** registration token → machine id */
  readonly tokens = new Map<string, string>([['good-token', 'machine-1']]);
  /** machine id → credential handed out by Register */
  readonly credentials = new Map<string, string>();
  readonly received: AgentMessage__Output[] = [];
  readonly sessions: Session[] = [];
  readonly packages = new Map<string, Buffer>();
  registrations = 0;
  /** Acknowledge every LogBatch and TaskResult as a real control plane would after storing it. */
  autoAck = true;
  /** The heartbeat interval Welcome asks for. */
  welcomeHeartbeatMs = 200;

  static async start(port = 0, previous?: FakeControlPlane): Promise<FakeControlPlane> {
    const plane = new FakeControlPlane();
    if (previous) for (const [k, v] of previous.credentials) plane.credentials.set(k, v);
    const { AgentService } = loadAgentProto().gantry.agent.v1;
    plane.server.addService(AgentService.service, {
      Register: (
        call: grpc.ServerUnaryCall<{ registrationToken: string }, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        const machineId = plane.tokens.get(call.request.registrationToken);
        if (!machineId)
          return callback({ code: grpc.status.UNAUTHENTICATED, details: 'unknown or used registration token' });
        plane.tokens.delete(call.request.registrationToken);
        plane.registrations++;
        const credential = `credential-${machineId}`;
        plane.credentials.set(machineId, credential);
        callback(null, { machineId, agentCredential: credential });
      },
      Connect: (call: Session) => {
        if (!plane.#authenticated(call.metadata)) {
          call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'bad agent credential' });
          return;
        }
        plane.sessions.push(call);
        call.on('data', (message: AgentMessage__Output) => {
          plane.received.push(message);
          if (message.hello) call.write({ welcome: { heartbeatIntervalMs: plane.welcomeHeartbeatMs } });
          if (!plane.autoAck) return;
          if (message.logBatch) {
            const last = message.logBatch.lines.at(-1);
            if (last) call.write({ ackLogs: { taskId: message.logBatch.taskId, seq: last.seq } });
          }
          for (const result of [message.taskResult, ...(message.hello?.unacknowledgedResults ?? [])]) {
            if (result) call.write({ ackResult: { taskId: result.taskId } });
          }
        });
        call.on('end', () => call.end());
        call.on('error', () => undefined);
      },
      DownloadPackage: (call: grpc.ServerWritableStream<{ packageId: string; version: string }, unknown>) => {
        if (!plane.#authenticated(call.metadata)) {
          call.emit('error', { code: grpc.status.UNAUTHENTICATED, details: 'bad agent credential' });
          return;
        }
        const bytes = plane.packages.get(`${call.request.packageId}@${call.request.version}`);
        if (!bytes) {
          call.emit('error', { code: grpc.status.NOT_FOUND, details: 'no such package' });
          return;
        }
        for (let offset = 0; offset < bytes.length; offset += 64 * 1024)
          call.write({ data: bytes.subarray(offset, offset + 64 * 1024) });
        call.end();
      },
    });
    plane.port = await new Promise<number>((resolve, reject) => {
      plane.server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      );
    });
    return plane;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Sends to the newest session. */
  send(message: ServerMessage): void {
    const session = this.sessions.at(-1);
    if (!session) throw new Error('no agent session');
    session.write(message);
  }

  /** Abrupt stop, like a killed replica. */
  stop(): void {
    this.server.forceShutdown();
  }

  #authenticated(metadata: grpc.Metadata): boolean {
    const machineId = String(metadata.get(METADATA_MACHINE_ID)[0] ?? '');
    const credential = String(metadata.get(METADATA_AGENT_CREDENTIAL)[0] ?? '');
    return machineId !== '' && this.credentials.get(machineId) === credential;
  }
}
