// The gateway's side of agent identity: Register's token and the call metadata of Connect /
// DownloadPackage, checked for shape here and redeemed by the domain (domain/agent-identity.ts).
// Neither secret is ever logged.
import * as grpc from '@grpc/grpc-js';
import { CoalescedBatch, type Clock } from '../core/index.ts';
import {
  machineForCredential,
  redeemRegistrationToken,
  type AgentIdentityStore,
  type AgentMachine,
  type EnrollmentReport,
  type EnrollmentResult,
} from '../domain/index.ts';
import { grpcStatus } from './grpc-errors.ts';
import {
  METADATA_AGENT_CREDENTIAL,
  METADATA_MACHINE_ID,
  type RegisterRequest,
  type RegisterResponse,
} from './proto.ts';

export type GatewayStore = AgentIdentityStore;
export type Enroll = (enrollmentKey: string, report: EnrollmentReport) => Promise<EnrollmentResult>;
export type AuthenticatedMachine = AgentMachine;

const MAX_SECRET_LENGTH = 512;
/** Calls within this of a credential read are answered by the next one (CoalescedBatch). */
const CREDENTIAL_BATCH_GAP_MS = 20;

/**
 * The store with credential lookups of calls that arrive together answered by one read: a fleet
 * reconnecting after a replica restart authenticates hundreds of calls a second.
 */
export function batchedCredentials(store: GatewayStore): GatewayStore {
  const lookups = new CoalescedBatch<string, null, AuthenticatedMachine>(CREDENTIAL_BATCH_GAP_MS, (hashes) =>
    store.machines.findByCredentialHashes([...hashes.keys()]),
  );
  return {
    machines: {
      ...store.machines,
      findByCredentialHash: async (credentialHash) => (await lookups.get(credentialHash, null)) ?? null,
    },
  };
}

export async function registerAgent(
  store: GatewayStore,
  clock: Clock,
  request: RegisterRequest,
  enroll?: Enroll,
): Promise<RegisterResponse> {
  if (request.enrollmentKey !== '') return enrollAgent(request, enroll);
  const refused = grpcStatus(
    grpc.status.UNAUTHENTICATED,
    'The registration token is unknown, already used or expired; create a new one with POST /api/machine/registration-token',
  );
  const token = request.registrationToken;
  if (token === '' || token.length > MAX_SECRET_LENGTH) throw refused;
  const redeemed = await redeemRegistrationToken(store, clock, token, request);
  if (!redeemed) throw refused;
  return { machineId: redeemed.machineId, agentCredential: redeemed.credential };
}

function single(metadata: grpc.Metadata, key: string): string | null {
  const values = metadata.get(key);
  const [value] = values;
  return values.length === 1 && typeof value === 'string' && value !== '' && value.length <= MAX_SECRET_LENGTH
    ? value
    : null;
}

/** The machine the call's metadata proves to be, or an UNAUTHENTICATED status to end the call with. */
export async function authenticateAgent(store: GatewayStore, metadata: grpc.Metadata): Promise<AuthenticatedMachine> {
  const refused = grpcStatus(
    grpc.status.UNAUTHENTICATED,
    `Unknown agent: ${METADATA_MACHINE_ID} and ${METADATA_AGENT_CREDENTIAL} do not match a registered machine`,
  );
  const machineId = single(metadata, METADATA_MACHINE_ID);
  const credential = single(metadata, METADATA_AGENT_CREDENTIAL);
  if (machineId === null || credential === null) throw refused;
  const machine = await machineForCredential(store, machineId, credential);
  if (!machine) throw refused;
  return machine;
}

async function enrollAgent(request: RegisterRequest, enroll: Enroll | undefined): Promise<RegisterResponse> {
  const key = request.enrollmentKey;
  if (!enroll || key.length > MAX_SECRET_LENGTH)
    throw grpcStatus(grpc.status.UNAUTHENTICATED, 'The enrollment key is unknown, revoked or expired');
  const result = await enroll(key, request);
  if (result.ok) return { machineId: result.machineId, agentCredential: result.credential };
  switch (result.reason) {
    case 'refused':
      throw grpcStatus(grpc.status.UNAUTHENTICATED, 'The enrollment key is unknown, revoked or expired');
    case 'invalid-name':
      throw grpcStatus(
        grpc.status.INVALID_ARGUMENT,
        `Machine name '${(request.machineName || request.hostname).slice(0, 100)}' is not valid: letters, digits, '.', '_' and '-', at most 100 (set GANTRY_AGENT_NAME)`,
      );
    case 'name-taken':
      throw grpcStatus(
        grpc.status.ALREADY_EXISTS,
        `A machine named '${(request.machineName || request.hostname).slice(0, 100)}' already exists in the workspace and was not enrolled with this key (set GANTRY_AGENT_NAME)`,
      );
  }
}
