// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

// Original file: gantry/agent/v1/agent.proto

export const _gantry_agent_v1_LogLine_Stream = {
  STREAM_UNSPECIFIED: 'STREAM_UNSPECIFIED',
  STDOUT: 'STDOUT',
  STDERR: 'STDERR',
  SYSTEM: 'SYSTEM',
} as const;

export type _gantry_agent_v1_LogLine_Stream =
  | 'STREAM_UNSPECIFIED'
  | 0
  | 'STDOUT'
  | 1
  | 'STDERR'
  | 2
  | 'SYSTEM'
  | 3

export type _gantry_agent_v1_LogLine_Stream__Output = typeof _gantry_agent_v1_LogLine_Stream[keyof typeof _gantry_agent_v1_LogLine_Stream]

export interface LogLine {
  'seq'?: (number | string | Long);
  'stream'?: (_gantry_agent_v1_LogLine_Stream);
  'text'?: (string);
  'unixNanos'?: (number | string | Long);
}

export interface LogLine__Output {
  'seq': (string);
  'stream': (_gantry_agent_v1_LogLine_Stream__Output);
  'text': (string);
  'unixNanos': (string);
}
