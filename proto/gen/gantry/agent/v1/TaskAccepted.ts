// Original file: gantry/agent/v1/agent.proto


export interface TaskAccepted {
  'taskId'?: (string);
}

export interface TaskAccepted__Output {
  'taskId': (string);
}
