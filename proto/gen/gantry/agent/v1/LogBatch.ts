// Original file: gantry/agent/v1/agent.proto

import type { LogLine as _gantry_agent_v1_LogLine, LogLine__Output as _gantry_agent_v1_LogLine__Output } from '../../../gantry/agent/v1/LogLine.ts';

export interface LogBatch {
  'taskId'?: (string);
  'lines'?: (_gantry_agent_v1_LogLine)[];
}

export interface LogBatch__Output {
  'taskId': (string);
  'lines': (_gantry_agent_v1_LogLine__Output)[];
}
