// Original file: gantry/agent/v1/agent.proto


export interface CancelTask {
  'taskId'?: (string);
  'graceMs'?: (number);
}

export interface CancelTask__Output {
  'taskId': (string);
  'graceMs': (number);
}
