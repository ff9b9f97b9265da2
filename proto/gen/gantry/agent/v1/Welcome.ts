// Original file: gantry/agent/v1/agent.proto


export interface Welcome {
  'heartbeatIntervalMs'?: (number);
  'acceptsLogChunks'?: (boolean);
  'maxUnackedLogBytes'?: (number);
}

export interface Welcome__Output {
  'heartbeatIntervalMs': (number);
  'acceptsLogChunks': (boolean);
  'maxUnackedLogBytes': (number);
}
