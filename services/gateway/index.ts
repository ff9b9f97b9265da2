/** The agent gateway concern: its public surface. */
export { createGateway } from './gateway.ts';
export { heartbeatPaceFor, type HeartbeatPace } from './heartbeat-pace.ts';
export type { AgentBundle } from './agent-session.ts';
export type { Gateway, GatewayOptions } from './gateway.ts';
export type { GatewayStore } from './agent-auth.ts';
export type { PackageSource } from './package-download.ts';
export { MAX_CHUNK_BYTES } from './package-download.ts';
export {
  LOADER_OPTIONS,
  PROTO_ROOT,
  AGENT_PROTO_FILE,
  METADATA_MACHINE_ID,
  METADATA_AGENT_CREDENTIAL,
  loadAgentProto,
} from './proto.ts';
