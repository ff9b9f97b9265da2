// Original file: gantry/agent/v1/agent.proto

import type { Hello as _gantry_agent_v1_Hello, Hello__Output as _gantry_agent_v1_Hello__Output } from '../../../gantry/agent/v1/Hello.ts';
import type { Heartbeat as _gantry_agent_v1_Heartbeat, Heartbeat__Output as _gantry_agent_v1_Heartbeat__Output } from '../../../gantry/agent/v1/Heartbeat.ts';
import type { TaskAccepted as _gantry_agent_v1_TaskAccepted, TaskAccepted__Output as _gantry_agent_v1_TaskAccepted__Output } from '../../../gantry/agent/v1/TaskAccepted.ts';
import type { LogBatch as _gantry_agent_v1_LogBatch, LogBatch__Output as _gantry_agent_v1_LogBatch__Output } from '../../../gantry/agent/v1/LogBatch.ts';
import type { TaskResult as _gantry_agent_v1_TaskResult, TaskResult__Output as _gantry_agent_v1_TaskResult__Output } from '../../../gantry/agent/v1/TaskResult.ts';
import type { UpgradeStatus as _gantry_agent_v1_UpgradeStatus, UpgradeStatus__Output as _gantry_agent_v1_UpgradeStatus__Output } from '../../../gantry/agent/v1/UpgradeStatus.ts';

export interface AgentMessage {
  'hello'?: (_gantry_agent_v1_Hello | null);
  'heartbeat'?: (_gantry_agent_v1_Heartbeat | null);
  'taskAccepted'?: (_gantry_agent_v1_TaskAccepted | null);
  'logBatch'?: (_gantry_agent_v1_LogBatch | null);
  'taskResult'?: (_gantry_agent_v1_TaskResult | null);
  'upgradeStatus'?: (_gantry_agent_v1_UpgradeStatus | null);
  'payload'?: "hello"|"heartbeat"|"taskAccepted"|"logBatch"|"taskResult"|"upgradeStatus";
}

export interface AgentMessage__Output {
  'hello'?: (_gantry_agent_v1_Hello__Output | null);
  'heartbeat'?: (_gantry_agent_v1_Heartbeat__Output | null);
  'taskAccepted'?: (_gantry_agent_v1_TaskAccepted__Output | null);
  'logBatch'?: (_gantry_agent_v1_LogBatch__Output | null);
  'taskResult'?: (_gantry_agent_v1_TaskResult__Output | null);
  'upgradeStatus'?: (_gantry_agent_v1_UpgradeStatus__Output | null);
  'payload'?: "hello"|"heartbeat"|"taskAccepted"|"logBatch"|"taskResult"|"upgradeStatus";
}
