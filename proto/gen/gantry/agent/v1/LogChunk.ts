// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface LogChunk {
  'firstSeq'?: (number | string | Long);
  'count'?: (number);
  'firstUnixNanos'?: (number | string | Long);
  'text'?: (Buffer | Uint8Array | string);
  'streams'?: (Buffer | Uint8Array | string);
  'timeDeltas'?: (Buffer | Uint8Array | string);
}

export interface LogChunk__Output {
  'firstSeq': (string);
  'count': (number);
  'firstUnixNanos': (string);
  'text': (Buffer);
  'streams': (Buffer);
  'timeDeltas': (Buffer);
}
