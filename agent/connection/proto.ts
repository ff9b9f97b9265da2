// The agent's view of the contract: the shared loader (proto/index.ts) and the generated message
// types from proto/gen/ under short names.
export * from '../../proto/index.ts';
export type { AgentServiceClient } from '../../proto/index.ts';
export type { AgentMessage } from '../../proto/index.ts';
export type { ServerMessage__Output as ServerMessage } from '../../proto/index.ts';
export type { RunTask__Output as RunTask } from '../../proto/index.ts';
export type { CancelTask__Output as CancelTask } from '../../proto/index.ts';
export type { PackageRef__Output as PackageRef } from '../../proto/index.ts';
// Outgoing (agent → control plane) message types: every field optional.
export type { LogLine } from '../../proto/index.ts';
export type { TaskResult } from '../../proto/index.ts';
export type { Hello } from '../../proto/index.ts';
export type { UpgradeAgent__Output as UpgradeAgent } from '../../proto/index.ts';
export type { UpgradeStatus } from '../../proto/index.ts';
