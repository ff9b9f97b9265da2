// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface UpgradeAgent {
  'version'?: (string);
  'bundleName'?: (string);
  'sha256'?: (string);
  'sizeBytes'?: (number | string | Long);
}

export interface UpgradeAgent__Output {
  'version': (string);
  'bundleName': (string);
  'sha256': (string);
  'sizeBytes': (string);
}
