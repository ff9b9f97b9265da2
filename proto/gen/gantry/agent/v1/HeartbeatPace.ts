// Original file: gantry/agent/v1/agent.proto


export interface HeartbeatPace {
  'heartbeatIntervalMs'?: (number);
}

export interface HeartbeatPace__Output {
  'heartbeatIntervalMs': (number);
}
