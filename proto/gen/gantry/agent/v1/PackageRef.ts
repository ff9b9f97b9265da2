// Original file: gantry/agent/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface PackageRef {
  'packageId'?: (string);
  'version'?: (string);
  'sha256'?: (string);
  'sizeBytes'?: (number | string | Long);
  'format'?: (string);
}

export interface PackageRef__Output {
  'packageId': (string);
  'version': (string);
  'sha256': (string);
  'sizeBytes': (string);
  'format': (string);
}
