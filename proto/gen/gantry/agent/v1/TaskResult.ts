// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

// Original file: gantry/agent/v1/agent.proto

export const _gantry_agent_v1_TaskResult_Outcome = {
  OUTCOME_UNSPECIFIED: 'OUTCOME_UNSPECIFIED',
  SUCCEEDED: 'SUCCEEDED',
  FAILED: 'FAILED',
  CANCELLED: 'CANCELLED',
} as const;

export type _gantry_agent_v1_TaskResult_Outcome =
  | 'OUTCOME_UNSPECIFIED'
  | 0
  | 'SUCCEEDED'
  | 1
  | 'FAILED'
  | 2
  | 'CANCELLED'
  | 3

export type _gantry_agent_v1_TaskResult_Outcome__Output = typeof _gantry_agent_v1_TaskResult_Outcome[keyof typeof _gantry_agent_v1_TaskResult_Outcome]

export interface TaskResult {
  'taskId'?: (string);
  'outcome'?: (_gantry_agent_v1_TaskResult_Outcome);
  'exitCode'?: (number);
  'message'?: (string);
  'lastLogSeq'?: (number | string | Long);
}

export interface TaskResult__Output {
  'taskId': (string);
  'outcome': (_gantry_agent_v1_TaskResult_Outcome__Output);
  'exitCode': (number);
  'message': (string);
  'lastLogSeq': (string);
}
