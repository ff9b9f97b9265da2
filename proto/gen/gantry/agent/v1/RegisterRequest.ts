// Original file: gantry/agent/v1/agent.proto


export interface RegisterRequest {
  'registrationToken'?: (string);
  'hostname'?: (string);
  'os'?: (string);
  'agentVersion'?: (string);
  'enrollmentKey'?: (string);
  'machineName'?: (string);
}

export interface RegisterRequest__Output {
  'registrationToken': (string);
  'hostname': (string);
  'os': (string);
  'agentVersion': (string);
  'enrollmentKey': (string);
  'machineName': (string);
}
