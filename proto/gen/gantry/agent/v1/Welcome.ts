// Original file: gantry/agent/v1/agent.proto


export interface Welcome {
  'heartbeatIntervalMs'?: (number);
}

export interface Welcome__Output {
  'heartbeatIntervalMs': (number);
}
