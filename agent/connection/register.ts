// One-time registration: trade GANTRY_AGENT_TOKEN for the agent's own credential, unless
// identity.json already holds one. Unreachable servers are retried; a refused token is fatal.
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { backoffDelayMs, type BackoffOptions } from './backoff.ts';
import { pause } from './pause.ts';
import { createAgentClient, waitForChannel } from './client.ts';
import { loadIdentity, saveIdentity, type AgentIdentity } from './identity.ts';

export interface AgentInfo {
  readonly agentVersion: string;
  readonly os: string;
  readonly hostname: string;
}

export interface EnsureIdentityOptions {
  readonly homeDir: string;
  readonly registrationToken: string | undefined;
  /** A fleet's enrollment key, used when there is no token; machineName names the new machine. */
  readonly enrollment?: { readonly key: string; readonly machineName: string | undefined } | undefined;
  readonly servers: readonly string[];
  readonly credentials: grpc.ChannelCredentials;
  readonly info: AgentInfo;
  readonly logger: Logger;
  readonly backoff: BackoffOptions;
  readonly signal: AbortSignal;
  /** Skip to the next address when a channel is not READY within this (default 5 s). */
  readonly connectTimeoutMs?: number;
}

/** The control plane refused the token, or there is neither identity nor token: start-up fails. */
export class RegistrationError extends Error {
  readonly code = 'REGISTRATION_FAILED';
  constructor(message: string) {
    super(message);
    this.name = 'RegistrationError';
  }
}

const FATAL_CODES = new Set([
  grpc.status.UNAUTHENTICATED,
  grpc.status.PERMISSION_DENIED,
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.ALREADY_EXISTS,
]);
const REGISTER_DEADLINE_MS = 10_000;

export async function ensureIdentity(options: EnsureIdentityOptions): Promise<AgentIdentity> {
  const existing = loadIdentity(options.homeDir);
  if (existing) {
    options.logger.info({ machineId: existing.machineId }, 'using the saved agent identity');
    return existing;
  }
  const token = options.registrationToken;
  const enrollment = token ? undefined : options.enrollment;
  if (!token && !enrollment) {
    throw new RegistrationError(
      `No identity in ${options.homeDir}, no GANTRY_AGENT_TOKEN and no GANTRY_AGENT_ENROLLMENT_KEY: create the machine with POST /api/machine and start the agent with its registrationToken (or use an enrollment key)`,
    );
  }
  for (let attempt = 0; ; attempt++) {
    options.signal.throwIfAborted();
    const server = options.servers[attempt % options.servers.length] ?? '';
    const client = createAgentClient(server, options.credentials);
    try {
      await waitForChannel(client, options.connectTimeoutMs ?? 5000);
      const response = await new Promise<{ machineId: string; agentCredential: string }>((resolve, reject) => {
        client.Register(
          {
            registrationToken: token ?? '',
            enrollmentKey: enrollment?.key ?? '',
            machineName: enrollment?.machineName ?? '',
            ...options.info,
          },
          new grpc.Metadata({ waitForReady: true }),
          { deadline: Date.now() + REGISTER_DEADLINE_MS },
          (error, value) => (error || !value ? reject(error ?? new Error('empty response')) : resolve(value)),
        );
      });
      const identity = { machineId: response.machineId, credential: response.agentCredential };
      saveIdentity(options.homeDir, identity);
      options.logger.info({ machineId: identity.machineId, server }, 'registered');
      return identity;
    } catch (error) {
      const status = error as Partial<grpc.ServiceError>;
      if (status.code !== undefined && FATAL_CODES.has(status.code)) {
        throw new RegistrationError(
          enrollment
            ? `The control plane refused the enrollment (${status.details ?? status.message})`
            : `The control plane refused the registration token (${status.details ?? status.message}): create a new one with POST /api/machine`,
        );
      }
      const delayMs = backoffDelayMs(attempt, options.backoff);
      options.logger.warn({ server, delayMs, error: status.message }, 'registration failed; retrying');
      await pause(delayMs, options.signal);
    } finally {
      client.close();
    }
  }
}
