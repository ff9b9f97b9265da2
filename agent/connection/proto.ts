// Loads proto/gantry/agent/v1/agent.proto at runtime (no codegen step at start-up) and re-exports
// the generated message types from proto/gen/ under short names. The control plane's gateway
// must load the same file with the same LOADER_OPTIONS, or field shapes differ (longs, enums).
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from '../../proto/gen/agent.ts';

export type { AgentServiceClient } from '../../proto/gen/gantry/agent/v1/AgentService.ts';
export type { AgentMessage } from '../../proto/gen/gantry/agent/v1/AgentMessage.ts';
export type { ServerMessage__Output as ServerMessage } from '../../proto/gen/gantry/agent/v1/ServerMessage.ts';
export type { RunTask__Output as RunTask } from '../../proto/gen/gantry/agent/v1/RunTask.ts';
export type { CancelTask__Output as CancelTask } from '../../proto/gen/gantry/agent/v1/CancelTask.ts';
export type { PackageRef__Output as PackageRef } from '../../proto/gen/gantry/agent/v1/PackageRef.ts';
// Outgoing (agent → control plane) message types: every field optional.
export type { LogLine } from '../../proto/gen/gantry/agent/v1/LogLine.ts';
export type { TaskResult } from '../../proto/gen/gantry/agent/v1/TaskResult.ts';
export type { Hello } from '../../proto/gen/gantry/agent/v1/Hello.ts';

/** Folder holding `gantry/agent/v1/agent.proto` (the include root). */
export const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
export const AGENT_PROTO_FILE = 'gantry/agent/v1/agent.proto';

/** Must match the flags in proto/generate.sh, which produced the types in proto/gen/. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

/** Call-metadata keys that authenticate Connect and DownloadPackage. */
export const METADATA_MACHINE_ID = 'x-gantry-machine-id';
export const METADATA_AGENT_CREDENTIAL = 'x-gantry-agent-credential';

let cached: ProtoGrpcType | undefined;

/** The loaded package tree: `loadAgentProto().gantry.agent.v1.AgentService` (client + `.service`). */
export function loadAgentProto(): ProtoGrpcType {
  if (!cached) {
    const definition = protoLoader.loadSync(AGENT_PROTO_FILE, LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return cached;
}
