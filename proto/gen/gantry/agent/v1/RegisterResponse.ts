// Original file: gantry/agent/v1/agent.proto


export interface RegisterResponse {
  'machineId'?: (string);
  'agentCredential'?: (string);
}

export interface RegisterResponse__Output {
  'machineId': (string);
  'agentCredential': (string);
}
