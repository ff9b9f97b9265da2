// Loads proto/gantry/agent/v1/agent.proto at runtime (no codegen step at start-up). The ONE
// loader both sides use: the agent (agent/connection/proto.ts) and the control plane's gateway
// (services/gateway/proto.ts) must agree on field shapes (int64 as strings, enums as names,
// oneof `payload`), and these options must equal the flags in proto/generate.sh.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { ProtoGrpcType } from './gen/agent.ts';

export type { ProtoGrpcType };

/** Folder holding `gantry/agent/v1/agent.proto` (the include root). */
export const PROTO_ROOT = fileURLToPath(new URL('./', import.meta.url));
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

/** The loaded package tree: `loadAgentProto().gantry.agent.v1.AgentService` (client + `.service`). */
export function loadAgentProto(): ProtoGrpcType {
  if (!cached) {
    const definition = protoLoader.loadSync(AGENT_PROTO_FILE, LOADER_OPTIONS);
    cached = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
  }
  return cached;
}
