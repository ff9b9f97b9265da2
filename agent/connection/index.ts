// Public surface of agent/connection: the gRPC side of the agent (proto loading, registration,
// the Connect session). Imports only proto/ and npm packages.
export { AgentConnection, type AgentConnectionOptions } from './agent-connection.ts';
export { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.ts';
export { authMetadata, createAgentClient } from './client.ts';
export {
  agentChannelCredentials,
  hostCheckedCredentials,
  learnPinnedCa,
  PinMismatchError,
  PINNED_CA_FILE,
  type TrustSettings,
} from './pinned-ca.ts';
export { identityFile, loadIdentity, saveIdentity, type AgentIdentity } from './identity.ts';
export { ensureIdentity, RegistrationError, type AgentInfo, type EnsureIdentityOptions } from './register.ts';
export type { AgentLink, HelloState, SessionHandler, SessionSettings } from './session-handler.ts';
export {
  AGENT_PROTO_FILE,
  LOADER_OPTIONS,
  loadAgentProto,
  METADATA_AGENT_CREDENTIAL,
  METADATA_MACHINE_ID,
  PROTO_ROOT,
  type AgentMessage,
  type CancelTask,
  type Hello,
  type LogLine,
  type TaskResult,
  type PackageRef,
  type RunTask,
  type ServerMessage,
  type UpgradeAgent,
  type UpgradeStatus,
} from './proto.ts';
