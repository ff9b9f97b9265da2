// The agent's view of the contract: the shared loader (proto/load.ts) and the generated message
// types from proto/gen/ under short names.
export * from '../../proto/load.ts';
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
