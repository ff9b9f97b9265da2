// Original file: gantry/agent/v1/agent.proto


// Original file: gantry/agent/v1/agent.proto

export const _gantry_agent_v1_UpgradeStatus_State = {
  STATE_UNSPECIFIED: 'STATE_UNSPECIFIED',
  STARTED: 'STARTED',
  FAILED: 'FAILED',
} as const;

export type _gantry_agent_v1_UpgradeStatus_State =
  | 'STATE_UNSPECIFIED'
  | 0
  | 'STARTED'
  | 1
  | 'FAILED'
  | 2

export type _gantry_agent_v1_UpgradeStatus_State__Output = typeof _gantry_agent_v1_UpgradeStatus_State[keyof typeof _gantry_agent_v1_UpgradeStatus_State]

export interface UpgradeStatus {
  'version'?: (string);
  'state'?: (_gantry_agent_v1_UpgradeStatus_State);
  'message'?: (string);
}

export interface UpgradeStatus__Output {
  'version': (string);
  'state': (_gantry_agent_v1_UpgradeStatus_State__Output);
  'message': (string);
}
