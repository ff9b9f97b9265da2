// Original file: gantry/agent/v1/agent.proto


export interface DownloadAgentBundleRequest {
  'version'?: (string);
}

export interface DownloadAgentBundleRequest__Output {
  'version': (string);
}
