// Original file: gantry/agent/v1/agent.proto


export interface PackageChunk {
  'data'?: (Buffer | Uint8Array | string);
}

export interface PackageChunk__Output {
  'data': (Buffer);
}
