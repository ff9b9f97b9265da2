// Loads proto/gantry/agent/v1/agent.proto at runtime for the control plane's side of the agent
// contract. The options MUST equal the agent's (agent/connection/proto.ts) and proto/generate.sh's,
// or the two sides disagree on field shapes (int64 as strings, enums as names, oneof `payload`).
// The gateway never imports agent/: both load the same file independently.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../../proto/gen/agent.ts';

export type { AgentServiceHandlers } from '../../proto/gen/gantry/agent/v1/AgentService.ts';
export type { AgentMessage__Output as AgentMessage } from '../../proto/gen/gantry/agent/v1/AgentMessage.ts';
export type { ServerMessage } from '../../proto/gen/gantry/agent/v1/ServerMessage.ts';
export type { Hello__Output as Hello } from '../../proto/gen/gantry/agent/v1/Hello.ts';
export type { LogLine__Output as LogLine } from '../../proto/gen/gantry/agent/v1/LogLine.ts';
export type { TaskResult__Output as TaskResult } from '../../proto/gen/gantry/agent/v1/TaskResult.ts';
export type { RunTask } from '../../proto/gen/gantry/agent/v1/RunTask.ts';
export type { RegisterRequest__Output as RegisterRequest } from '../../proto/gen/gantry/agent/v1/RegisterRequest.ts';
export type { RegisterResponse } from '../../proto/gen/gantry/agent/v1/RegisterResponse.ts';
export type { DownloadPackageRequest__Output as DownloadPackageRequest } from '../../proto/gen/gantry/agent/v1/DownloadPackageRequest.ts';
export type { PackageChunk } from '../../proto/gen/gantry/agent/v1/PackageChunk.ts';
export type { ProtoGrpcType };

/** Folder holding `gantry/agent/v1/agent.proto` (the include root). */
export const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
export const AGENT_PROTO_FILE = 'gantry/agent/v1/agent.proto';

export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

/** Call-metadata keys that authenticate Connect and DownloadPackage (see agent.proto). */
export const METADATA_MACHINE_ID = 'x-gantry-machine-id';
export const METADATA_AGENT_CREDENTIAL = 'x-gantry-agent-credential';

let cached: ProtoGrpcType | undefined;

/** The loaded package tree: `loadAgentProto().gantry.agent.v1.AgentService.service` is the definition. */
export function loadAgentProto(): ProtoGrpcType {
  if (!cached) {
    const definition = protoLoader.loadSync(AGENT_PROTO_FILE, LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return cached;
}
