// The control plane's view of the agent contract: the shared loader (proto/load.ts) and the
// generated message types it uses, under short names.
export * from '../../proto/load.ts';
export type { AgentServiceHandlers } from '../../proto/gen/gantry/agent/v1/AgentService.ts';
export type { AgentMessage__Output as AgentMessage } from '../../proto/gen/gantry/agent/v1/AgentMessage.ts';
export type { ServerMessage } from '../../proto/gen/gantry/agent/v1/ServerMessage.ts';
export type { Hello__Output as Hello } from '../../proto/gen/gantry/agent/v1/Hello.ts';
export type { LogLine__Output as LogLine } from '../../proto/gen/gantry/agent/v1/LogLine.ts';
export type { LogBatch__Output as LogBatch } from '../../proto/gen/gantry/agent/v1/LogBatch.ts';
export type { LogChunk__Output as LogChunk } from '../../proto/gen/gantry/agent/v1/LogChunk.ts';
export type { TaskResult__Output as TaskResult } from '../../proto/gen/gantry/agent/v1/TaskResult.ts';
export type { RunTask } from '../../proto/gen/gantry/agent/v1/RunTask.ts';
export type { RegisterRequest__Output as RegisterRequest } from '../../proto/gen/gantry/agent/v1/RegisterRequest.ts';
export type { RegisterResponse } from '../../proto/gen/gantry/agent/v1/RegisterResponse.ts';
export type { DownloadPackageRequest__Output as DownloadPackageRequest } from '../../proto/gen/gantry/agent/v1/DownloadPackageRequest.ts';
export type { PackageChunk } from '../../proto/gen/gantry/agent/v1/PackageChunk.ts';
