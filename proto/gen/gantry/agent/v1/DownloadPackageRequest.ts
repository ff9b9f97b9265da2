// Original file: gantry/agent/v1/agent.proto


export interface DownloadPackageRequest {
  'packageId'?: (string);
  'version'?: (string);
}

export interface DownloadPackageRequest__Output {
  'packageId': (string);
  'version': (string);
}
