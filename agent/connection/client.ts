// gRPC channel setup shared by registration, the session and package downloads.
import * as grpc from '@grpc/grpc-js';
import type { AgentIdentity } from './identity.ts';
import { channelTrust } from './pinned-ca.ts';
import { loadAgentProto, METADATA_AGENT_CREDENTIAL, METADATA_MACHINE_ID, type AgentServiceClient } from './proto.ts';

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // Notice a dead connection within ~40 s even when nothing is being sent (stack-notes §4.2).
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  // Keep the channel's own transport retries short; the session loop does the real backoff.
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 5_000,
  // grpc-js's introspection (channelz) is on by default: per-channel trackers and trace lines, and
  // counters on every message, for a service the agent never serves.
  'grpc.enable_channelz': 0,
};

/** `extra`: options on top of the agent's own (bench/fleet gives each simulated agent a connection of its own). */
export function createAgentClient(
  address: string,
  credentials: grpc.ChannelCredentials,
  extra: grpc.ChannelOptions = {},
): AgentServiceClient {
  const { AgentService } = loadAgentProto().gantry.agent.v1;
  const trust = channelTrust(address, credentials);
  return new AgentService(address, trust.credentials, {
    ...CHANNEL_OPTIONS,
    ...(trust.serverName ? { 'grpc.ssl_target_name_override': trust.serverName } : {}),
    ...extra,
  });
}

/**
 * Call metadata with the agent's identity. waitForReady (a metadata option in grpc-js): the call
 * waits for a connecting channel instead of failing at once.
 */
export function authMetadata(identity: AgentIdentity): grpc.Metadata {
  const metadata = new grpc.Metadata({ waitForReady: true });
  metadata.set(METADATA_MACHINE_ID, identity.machineId);
  metadata.set(METADATA_AGENT_CREDENTIAL, identity.credential);
  return metadata;
}

/**
 * Resolves when the channel is READY; rejects after timeoutMs, or as soon as a connection attempt
 * fails (a refused connection: the replica is down, so the agent moves on to the next address at
 * once instead of retrying a dead one until the timeout).
 */
export function waitForChannel(client: grpc.Client, timeoutMs: number): Promise<void> {
  const channel = client.getChannel();
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const check = (): void => {
      const state = channel.getConnectivityState(true);
      if (state === grpc.connectivityState.READY) return resolve();
      if (state === grpc.connectivityState.TRANSIENT_FAILURE || state === grpc.connectivityState.SHUTDOWN)
        return reject(new Error(`the connection to ${channel.getTarget()} failed`));
      if (Date.now() >= deadline)
        return reject(new Error(`no connection to ${channel.getTarget()} within ${timeoutMs} ms`));
      channel.watchConnectivityState(state, deadline, check);
    };
    check();
  });
}
