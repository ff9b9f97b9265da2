// Original file: gantry/agent/v1/agent.proto

import type { Welcome as _gantry_agent_v1_Welcome, Welcome__Output as _gantry_agent_v1_Welcome__Output } from '../../../gantry/agent/v1/Welcome.ts';
import type { RunTask as _gantry_agent_v1_RunTask, RunTask__Output as _gantry_agent_v1_RunTask__Output } from '../../../gantry/agent/v1/RunTask.ts';
import type { CancelTask as _gantry_agent_v1_CancelTask, CancelTask__Output as _gantry_agent_v1_CancelTask__Output } from '../../../gantry/agent/v1/CancelTask.ts';
import type { AckResult as _gantry_agent_v1_AckResult, AckResult__Output as _gantry_agent_v1_AckResult__Output } from '../../../gantry/agent/v1/AckResult.ts';
import type { AckLogs as _gantry_agent_v1_AckLogs, AckLogs__Output as _gantry_agent_v1_AckLogs__Output } from '../../../gantry/agent/v1/AckLogs.ts';
import type { UpgradeAgent as _gantry_agent_v1_UpgradeAgent, UpgradeAgent__Output as _gantry_agent_v1_UpgradeAgent__Output } from '../../../gantry/agent/v1/UpgradeAgent.ts';
import type { HeartbeatPace as _gantry_agent_v1_HeartbeatPace, HeartbeatPace__Output as _gantry_agent_v1_HeartbeatPace__Output } from '../../../gantry/agent/v1/HeartbeatPace.ts';

export interface ServerMessage {
  'welcome'?: (_gantry_agent_v1_Welcome | null);
  'runTask'?: (_gantry_agent_v1_RunTask | null);
  'cancelTask'?: (_gantry_agent_v1_CancelTask | null);
  'ackResult'?: (_gantry_agent_v1_AckResult | null);
  'ackLogs'?: (_gantry_agent_v1_AckLogs | null);
  'upgradeAgent'?: (_gantry_agent_v1_UpgradeAgent | null);
  'heartbeatPace'?: (_gantry_agent_v1_HeartbeatPace | null);
  'payload'?: "welcome"|"runTask"|"cancelTask"|"ackResult"|"ackLogs"|"upgradeAgent"|"heartbeatPace";
}

export interface ServerMessage__Output {
  'welcome'?: (_gantry_agent_v1_Welcome__Output | null);
  'runTask'?: (_gantry_agent_v1_RunTask__Output | null);
  'cancelTask'?: (_gantry_agent_v1_CancelTask__Output | null);
  'ackResult'?: (_gantry_agent_v1_AckResult__Output | null);
  'ackLogs'?: (_gantry_agent_v1_AckLogs__Output | null);
  'upgradeAgent'?: (_gantry_agent_v1_UpgradeAgent__Output | null);
  'heartbeatPace'?: (_gantry_agent_v1_HeartbeatPace__Output | null);
  'payload'?: "welcome"|"runTask"|"cancelTask"|"ackResult"|"ackLogs"|"upgradeAgent"|"heartbeatPace";
}
