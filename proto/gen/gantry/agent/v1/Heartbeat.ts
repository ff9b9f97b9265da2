// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface Heartbeat {
  'sentUnixMs'?: (number | string | Long);
  'homeFreeBytes'?: (number | string | Long);
}

export interface Heartbeat__Output {
  'sentUnixMs': (string);
  'homeFreeBytes': (string);
}
