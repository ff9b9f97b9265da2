// Original file: gantry/agent/v1/agent.proto

import type { TaskResult as _gantry_agent_v1_TaskResult, TaskResult__Output as _gantry_agent_v1_TaskResult__Output } from '../../../gantry/agent/v1/TaskResult.ts';
import type { Long } from '@grpc/proto-loader';

export interface Hello {
  'agentVersion'?: (string);
  'os'?: (string);
  'hostname'?: (string);
  'runningTaskIds'?: (string)[];
  'unacknowledgedResults'?: (_gantry_agent_v1_TaskResult)[];
  'interpreters'?: (string)[];
  'homeFreeBytes'?: (number | string | Long);
}

export interface Hello__Output {
  'agentVersion': (string);
  'os': (string);
  'hostname': (string);
  'runningTaskIds': (string)[];
  'unacknowledgedResults': (_gantry_agent_v1_TaskResult__Output)[];
  'interpreters': (string)[];
  'homeFreeBytes': (string);
}
