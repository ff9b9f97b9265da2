// The control plane's view of the agent contract: the shared loader (proto/index.ts) and the
// generated message types it uses, under short names.
export * from '../../proto/index.ts';
export type { AgentServiceHandlers } from '../../proto/index.ts';
export type { AgentMessage__Output as AgentMessage } from '../../proto/index.ts';
export type { ServerMessage } from '../../proto/index.ts';
export type { Hello__Output as Hello } from '../../proto/index.ts';
export type { LogLine__Output as LogLine } from '../../proto/index.ts';
export type { LogBatch__Output as LogBatch } from '../../proto/index.ts';
export type { LogChunk__Output as LogChunk } from '../../proto/index.ts';
export type { TaskResult__Output as TaskResult } from '../../proto/index.ts';
export type { RunTask } from '../../proto/index.ts';
export type { RegisterRequest__Output as RegisterRequest } from '../../proto/index.ts';
export type { RegisterResponse } from '../../proto/index.ts';
export type { DownloadPackageRequest__Output as DownloadPackageRequest } from '../../proto/index.ts';
export type { PackageChunk } from '../../proto/index.ts';
export type { DownloadAgentBundleRequest__Output as DownloadAgentBundleRequest } from '../../proto/index.ts';
export type { UpgradeStatus__Output as UpgradeStatus } from '../../proto/index.ts';
