import type * as grpc from '@grpc/grpc-js';
import type { MessageTypeDefinition } from '@grpc/proto-loader';

import type { AckLogs as _gantry_agent_v1_AckLogs, AckLogs__Output as _gantry_agent_v1_AckLogs__Output } from './gantry/agent/v1/AckLogs.ts';
import type { AckResult as _gantry_agent_v1_AckResult, AckResult__Output as _gantry_agent_v1_AckResult__Output } from './gantry/agent/v1/AckResult.ts';
import type { AgentMessage as _gantry_agent_v1_AgentMessage, AgentMessage__Output as _gantry_agent_v1_AgentMessage__Output } from './gantry/agent/v1/AgentMessage.ts';
import type { AgentServiceClient as _gantry_agent_v1_AgentServiceClient, AgentServiceDefinition as _gantry_agent_v1_AgentServiceDefinition } from './gantry/agent/v1/AgentService.ts';
import type { CancelTask as _gantry_agent_v1_CancelTask, CancelTask__Output as _gantry_agent_v1_CancelTask__Output } from './gantry/agent/v1/CancelTask.ts';
import type { DownloadAgentBundleRequest as _gantry_agent_v1_DownloadAgentBundleRequest, DownloadAgentBundleRequest__Output as _gantry_agent_v1_DownloadAgentBundleRequest__Output } from './gantry/agent/v1/DownloadAgentBundleRequest.ts';
import type { DownloadPackageRequest as _gantry_agent_v1_DownloadPackageRequest, DownloadPackageRequest__Output as _gantry_agent_v1_DownloadPackageRequest__Output } from './gantry/agent/v1/DownloadPackageRequest.ts';
import type { Heartbeat as _gantry_agent_v1_Heartbeat, Heartbeat__Output as _gantry_agent_v1_Heartbeat__Output } from './gantry/agent/v1/Heartbeat.ts';
import type { HeartbeatPace as _gantry_agent_v1_HeartbeatPace, HeartbeatPace__Output as _gantry_agent_v1_HeartbeatPace__Output } from './gantry/agent/v1/HeartbeatPace.ts';
import type { Hello as _gantry_agent_v1_Hello, Hello__Output as _gantry_agent_v1_Hello__Output } from './gantry/agent/v1/Hello.ts';
import type { LogBatch as _gantry_agent_v1_LogBatch, LogBatch__Output as _gantry_agent_v1_LogBatch__Output } from './gantry/agent/v1/LogBatch.ts';
import type { LogChunk as _gantry_agent_v1_LogChunk, LogChunk__Output as _gantry_agent_v1_LogChunk__Output } from './gantry/agent/v1/LogChunk.ts';
import type { LogLine as _gantry_agent_v1_LogLine, LogLine__Output as _gantry_agent_v1_LogLine__Output } from './gantry/agent/v1/LogLine.ts';
import type { PackageChunk as _gantry_agent_v1_PackageChunk, PackageChunk__Output as _gantry_agent_v1_PackageChunk__Output } from './gantry/agent/v1/PackageChunk.ts';
import type { PackageRef as _gantry_agent_v1_PackageRef, PackageRef__Output as _gantry_agent_v1_PackageRef__Output } from './gantry/agent/v1/PackageRef.ts';
import type { RegisterRequest as _gantry_agent_v1_RegisterRequest, RegisterRequest__Output as _gantry_agent_v1_RegisterRequest__Output } from './gantry/agent/v1/RegisterRequest.ts';
import type { RegisterResponse as _gantry_agent_v1_RegisterResponse, RegisterResponse__Output as _gantry_agent_v1_RegisterResponse__Output } from './gantry/agent/v1/RegisterResponse.ts';
import type { RunTask as _gantry_agent_v1_RunTask, RunTask__Output as _gantry_agent_v1_RunTask__Output } from './gantry/agent/v1/RunTask.ts';
import type { ServerMessage as _gantry_agent_v1_ServerMessage, ServerMessage__Output as _gantry_agent_v1_ServerMessage__Output } from './gantry/agent/v1/ServerMessage.ts';
import type { TaskAccepted as _gantry_agent_v1_TaskAccepted, TaskAccepted__Output as _gantry_agent_v1_TaskAccepted__Output } from './gantry/agent/v1/TaskAccepted.ts';
import type { TaskResult as _gantry_agent_v1_TaskResult, TaskResult__Output as _gantry_agent_v1_TaskResult__Output } from './gantry/agent/v1/TaskResult.ts';
import type { UpgradeAgent as _gantry_agent_v1_UpgradeAgent, UpgradeAgent__Output as _gantry_agent_v1_UpgradeAgent__Output } from './gantry/agent/v1/UpgradeAgent.ts';
import type { UpgradeStatus as _gantry_agent_v1_UpgradeStatus, UpgradeStatus__Output as _gantry_agent_v1_UpgradeStatus__Output } from './gantry/agent/v1/UpgradeStatus.ts';
import type { Welcome as _gantry_agent_v1_Welcome, Welcome__Output as _gantry_agent_v1_Welcome__Output } from './gantry/agent/v1/Welcome.ts';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  gantry: {
    agent: {
      v1: {
        AckLogs: MessageTypeDefinition<_gantry_agent_v1_AckLogs, _gantry_agent_v1_AckLogs__Output>
        AckResult: MessageTypeDefinition<_gantry_agent_v1_AckResult, _gantry_agent_v1_AckResult__Output>
        AgentMessage: MessageTypeDefinition<_gantry_agent_v1_AgentMessage, _gantry_agent_v1_AgentMessage__Output>
        AgentService: SubtypeConstructor<typeof grpc.Client, _gantry_agent_v1_AgentServiceClient> & { service: _gantry_agent_v1_AgentServiceDefinition }
        CancelTask: MessageTypeDefinition<_gantry_agent_v1_CancelTask, _gantry_agent_v1_CancelTask__Output>
        DownloadAgentBundleRequest: MessageTypeDefinition<_gantry_agent_v1_DownloadAgentBundleRequest, _gantry_agent_v1_DownloadAgentBundleRequest__Output>
        DownloadPackageRequest: MessageTypeDefinition<_gantry_agent_v1_DownloadPackageRequest, _gantry_agent_v1_DownloadPackageRequest__Output>
        Heartbeat: MessageTypeDefinition<_gantry_agent_v1_Heartbeat, _gantry_agent_v1_Heartbeat__Output>
        HeartbeatPace: MessageTypeDefinition<_gantry_agent_v1_HeartbeatPace, _gantry_agent_v1_HeartbeatPace__Output>
        Hello: MessageTypeDefinition<_gantry_agent_v1_Hello, _gantry_agent_v1_Hello__Output>
        LogBatch: MessageTypeDefinition<_gantry_agent_v1_LogBatch, _gantry_agent_v1_LogBatch__Output>
        LogChunk: MessageTypeDefinition<_gantry_agent_v1_LogChunk, _gantry_agent_v1_LogChunk__Output>
        LogLine: MessageTypeDefinition<_gantry_agent_v1_LogLine, _gantry_agent_v1_LogLine__Output>
        PackageChunk: MessageTypeDefinition<_gantry_agent_v1_PackageChunk, _gantry_agent_v1_PackageChunk__Output>
        PackageRef: MessageTypeDefinition<_gantry_agent_v1_PackageRef, _gantry_agent_v1_PackageRef__Output>
        RegisterRequest: MessageTypeDefinition<_gantry_agent_v1_RegisterRequest, _gantry_agent_v1_RegisterRequest__Output>
        RegisterResponse: MessageTypeDefinition<_gantry_agent_v1_RegisterResponse, _gantry_agent_v1_RegisterResponse__Output>
        RunTask: MessageTypeDefinition<_gantry_agent_v1_RunTask, _gantry_agent_v1_RunTask__Output>
        ServerMessage: MessageTypeDefinition<_gantry_agent_v1_ServerMessage, _gantry_agent_v1_ServerMessage__Output>
        TaskAccepted: MessageTypeDefinition<_gantry_agent_v1_TaskAccepted, _gantry_agent_v1_TaskAccepted__Output>
        TaskResult: MessageTypeDefinition<_gantry_agent_v1_TaskResult, _gantry_agent_v1_TaskResult__Output>
        UpgradeAgent: MessageTypeDefinition<_gantry_agent_v1_UpgradeAgent, _gantry_agent_v1_UpgradeAgent__Output>
        UpgradeStatus: MessageTypeDefinition<_gantry_agent_v1_UpgradeStatus, _gantry_agent_v1_UpgradeStatus__Output>
        Welcome: MessageTypeDefinition<_gantry_agent_v1_Welcome, _gantry_agent_v1_Welcome__Output>
      }
    }
  }
}

