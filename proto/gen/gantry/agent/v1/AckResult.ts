// Original file: gantry/agent/v1/agent.proto


export interface AckResult {
  'taskId'?: (string);
}

export interface AckResult__Output {
  'taskId': (string);
}
