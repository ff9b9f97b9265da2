// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface AckLogs {
  'taskId'?: (string);
  'seq'?: (number | string | Long);
}

export interface AckLogs__Output {
  'taskId': (string);
  'seq': (string);
}
