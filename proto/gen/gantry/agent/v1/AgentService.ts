// Original file: gantry/agent/v1/agent.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AgentMessage as _gantry_agent_v1_AgentMessage, AgentMessage__Output as _gantry_agent_v1_AgentMessage__Output } from '../../../gantry/agent/v1/AgentMessage.ts';
import type { DownloadAgentBundleRequest as _gantry_agent_v1_DownloadAgentBundleRequest, DownloadAgentBundleRequest__Output as _gantry_agent_v1_DownloadAgentBundleRequest__Output } from '../../../gantry/agent/v1/DownloadAgentBundleRequest.ts';
import type { DownloadPackageRequest as _gantry_agent_v1_DownloadPackageRequest, DownloadPackageRequest__Output as _gantry_agent_v1_DownloadPackageRequest__Output } from '../../../gantry/agent/v1/DownloadPackageRequest.ts';
import type { PackageChunk as _gantry_agent_v1_PackageChunk, PackageChunk__Output as _gantry_agent_v1_PackageChunk__Output } from '../../../gantry/agent/v1/PackageChunk.ts';
import type { RegisterRequest as _gantry_agent_v1_RegisterRequest, RegisterRequest__Output as _gantry_agent_v1_RegisterRequest__Output } from '../../../gantry/agent/v1/RegisterRequest.ts';
import type { RegisterResponse as _gantry_agent_v1_RegisterResponse, RegisterResponse__Output as _gantry_agent_v1_RegisterResponse__Output } from '../../../gantry/agent/v1/RegisterResponse.ts';
import type { ServerMessage as _gantry_agent_v1_ServerMessage, ServerMessage__Output as _gantry_agent_v1_ServerMessage__Output } from '../../../gantry/agent/v1/ServerMessage.ts';

export interface AgentServiceClient extends grpc.Client {
  Connect(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_ServerMessage__Output>;
  Connect(options?: grpc.CallOptions): grpc.ClientDuplexStream<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_ServerMessage__Output>;
  connect(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_ServerMessage__Output>;
  connect(options?: grpc.CallOptions): grpc.ClientDuplexStream<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_ServerMessage__Output>;
  
  DownloadAgentBundle(argument: _gantry_agent_v1_DownloadAgentBundleRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  DownloadAgentBundle(argument: _gantry_agent_v1_DownloadAgentBundleRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  downloadAgentBundle(argument: _gantry_agent_v1_DownloadAgentBundleRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  downloadAgentBundle(argument: _gantry_agent_v1_DownloadAgentBundleRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  
  DownloadPackage(argument: _gantry_agent_v1_DownloadPackageRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  DownloadPackage(argument: _gantry_agent_v1_DownloadPackageRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  downloadPackage(argument: _gantry_agent_v1_DownloadPackageRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  downloadPackage(argument: _gantry_agent_v1_DownloadPackageRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_gantry_agent_v1_PackageChunk__Output>;
  
  Register(argument: _gantry_agent_v1_RegisterRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  Register(argument: _gantry_agent_v1_RegisterRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  Register(argument: _gantry_agent_v1_RegisterRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  Register(argument: _gantry_agent_v1_RegisterRequest, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  register(argument: _gantry_agent_v1_RegisterRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  register(argument: _gantry_agent_v1_RegisterRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  register(argument: _gantry_agent_v1_RegisterRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  register(argument: _gantry_agent_v1_RegisterRequest, callback: grpc.requestCallback<_gantry_agent_v1_RegisterResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface AgentServiceHandlers extends grpc.UntypedServiceImplementation {
  Connect: grpc.handleBidiStreamingCall<_gantry_agent_v1_AgentMessage__Output, _gantry_agent_v1_ServerMessage>;
  
  DownloadAgentBundle: grpc.handleServerStreamingCall<_gantry_agent_v1_DownloadAgentBundleRequest__Output, _gantry_agent_v1_PackageChunk>;
  
  DownloadPackage: grpc.handleServerStreamingCall<_gantry_agent_v1_DownloadPackageRequest__Output, _gantry_agent_v1_PackageChunk>;
  
  Register: grpc.handleUnaryCall<_gantry_agent_v1_RegisterRequest__Output, _gantry_agent_v1_RegisterResponse>;
  
}

export interface AgentServiceDefinition extends grpc.ServiceDefinition {
  Connect: MethodDefinition<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_ServerMessage, _gantry_agent_v1_AgentMessage__Output, _gantry_agent_v1_ServerMessage__Output>
  DownloadAgentBundle: MethodDefinition<_gantry_agent_v1_DownloadAgentBundleRequest, _gantry_agent_v1_PackageChunk, _gantry_agent_v1_DownloadAgentBundleRequest__Output, _gantry_agent_v1_PackageChunk__Output>
  DownloadPackage: MethodDefinition<_gantry_agent_v1_DownloadPackageRequest, _gantry_agent_v1_PackageChunk, _gantry_agent_v1_DownloadPackageRequest__Output, _gantry_agent_v1_PackageChunk__Output>
  Register: MethodDefinition<_gantry_agent_v1_RegisterRequest, _gantry_agent_v1_RegisterResponse, _gantry_agent_v1_RegisterRequest__Output, _gantry_agent_v1_RegisterResponse__Output>
}
