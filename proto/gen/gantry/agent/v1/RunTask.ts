// Original file: gantry/agent/v1/agent.proto

import type { PackageRef as _gantry_agent_v1_PackageRef, PackageRef__Output as _gantry_agent_v1_PackageRef__Output } from '../../../gantry/agent/v1/PackageRef.ts';

export interface RunTask {
  'taskId'?: (string);
  'deploymentId'?: (string);
  'stepName'?: (string);
  'script'?: (string);
  'scriptLanguage'?: (string);
  'env'?: ({[key: string]: string});
  'sensitiveValues'?: (string)[];
  'packages'?: (_gantry_agent_v1_PackageRef)[];
  'redownloadPackages'?: (boolean);
  'timeoutSeconds'?: (number);
  'packageFolderToken'?: (string);
}

export interface RunTask__Output {
  'taskId': (string);
  'deploymentId': (string);
  'stepName': (string);
  'script': (string);
  'scriptLanguage': (string);
  'env': ({[key: string]: string});
  'sensitiveValues': (string)[];
  'packages': (_gantry_agent_v1_PackageRef__Output)[];
  'redownloadPackages': (boolean);
  'timeoutSeconds': (number);
  'packageFolderToken': (string);
}
