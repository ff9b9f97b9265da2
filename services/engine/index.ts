/** The engine's public surface: the gateway and the composition root import only this file. */
export { createEngine } from './engine.ts';
export type { Engine, EngineOptions } from './engine.ts';
export type {
  AgentInfo,
  AgentUpgradeReport,
  AgentLogChunk,
  AgentPort,
  AgentTaskResult,
  ResultReceipt,
  RunTaskPayload,
} from './agent-port.ts';
export { removeExpiredLogs, startLogRetention, type LogRetentionOptions } from './log-retention.ts';
