/**
 * The agent contract's public surface (agent.proto): the loader shared by the gateway and the
 * agent, the LogChunk codec, and the generated message types. Other folders import only this file.
 */
export * from './load.ts';
export { ChunkStream, decodeVarints, encodeVarints } from './log-chunk.ts';
export type { AgentServiceClient, AgentServiceHandlers } from './gen/gantry/agent/v1/AgentService.ts';
export type { AgentMessage, AgentMessage__Output } from './gen/gantry/agent/v1/AgentMessage.ts';
export type { CancelTask__Output } from './gen/gantry/agent/v1/CancelTask.ts';
export type { DownloadPackageRequest__Output } from './gen/gantry/agent/v1/DownloadPackageRequest.ts';
export type { Hello, Hello__Output } from './gen/gantry/agent/v1/Hello.ts';
export type { LogBatch__Output } from './gen/gantry/agent/v1/LogBatch.ts';
export type { LogChunk__Output } from './gen/gantry/agent/v1/LogChunk.ts';
export type { LogLine, LogLine__Output } from './gen/gantry/agent/v1/LogLine.ts';
export type { PackageChunk } from './gen/gantry/agent/v1/PackageChunk.ts';
export type { PackageRef__Output } from './gen/gantry/agent/v1/PackageRef.ts';
export type { RegisterRequest__Output } from './gen/gantry/agent/v1/RegisterRequest.ts';
export type { RegisterResponse } from './gen/gantry/agent/v1/RegisterResponse.ts';
export type { RunTask, RunTask__Output } from './gen/gantry/agent/v1/RunTask.ts';
export type { ServerMessage, ServerMessage__Output } from './gen/gantry/agent/v1/ServerMessage.ts';
export type { TaskResult, TaskResult__Output } from './gen/gantry/agent/v1/TaskResult.ts';
export type { DownloadAgentBundleRequest__Output } from './gen/gantry/agent/v1/DownloadAgentBundleRequest.ts';
export type { UpgradeAgent__Output } from './gen/gantry/agent/v1/UpgradeAgent.ts';
export type { UpgradeStatus, UpgradeStatus__Output } from './gen/gantry/agent/v1/UpgradeStatus.ts';
