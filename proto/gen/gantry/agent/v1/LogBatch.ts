// Original file: gantry/agent/v1/agent.proto

import type { LogLine as _gantry_agent_v1_LogLine, LogLine__Output as _gantry_agent_v1_LogLine__Output } from '../../../gantry/agent/v1/LogLine.ts';
import type { LogChunk as _gantry_agent_v1_LogChunk, LogChunk__Output as _gantry_agent_v1_LogChunk__Output } from '../../../gantry/agent/v1/LogChunk.ts';

export interface LogBatch {
  'taskId'?: (string);
  'lines'?: (_gantry_agent_v1_LogLine)[];
  'chunk'?: (_gantry_agent_v1_LogChunk | null);
}

export interface LogBatch__Output {
  'taskId': (string);
  'lines': (_gantry_agent_v1_LogLine__Output)[];
  'chunk': (_gantry_agent_v1_LogChunk__Output | null);
}
