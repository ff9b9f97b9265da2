// Agent identity: Register trades a one-time registration token for a credential, and Connect /
// DownloadPackage present machine ID + credential in call metadata. Only SHA-256 hashes of both
// secrets are stored (services/store/machines.ts); neither secret is ever logged.
import * as grpc from '@grpc/grpc-js';
import { hashSecret, newSecret, type Clock } from '../core/index.ts';
import type { Store } from '../store/index.ts';
import { grpcStatus } from './grpc-errors.ts';
import {
  METADATA_AGENT_CREDENTIAL,
  METADATA_MACHINE_ID,
  type RegisterRequest,
  type RegisterResponse,
} from './proto.ts';

/** The slice of the store the gateway uses. */
export interface GatewayStore {
  machines: Pick<Store['machines'], 'findByRegistrationTokenHash' | 'completeRegistration' | 'findByCredentialHash'>;
}

export type AuthenticatedMachine = NonNullable<Awaited<ReturnType<GatewayStore['machines']['findByCredentialHash']>>>;

const MAX_SECRET_LENGTH = 512;

// Reported info is free text from the agent: keep it to a sane length before it reaches the DB.
function clip(value: string): string | undefined {
  return value === '' ? undefined : value.slice(0, 200);
}

export async function registerAgent(
  store: GatewayStore,
  clock: Clock,
  request: RegisterRequest,
): Promise<RegisterResponse> {
  const refused = grpcStatus(
    grpc.status.UNAUTHENTICATED,
    'The registration token is unknown, already used or expired; create a new one with POST /api/machine/registration-token',
  );
  const token = request.registrationToken;
  if (token === '' || token.length > MAX_SECRET_LENGTH) throw refused;
  const now = clock.now();
  const machine = await store.machines.findByRegistrationTokenHash(hashSecret(token), now);
  if (!machine) throw refused;
  const credential = newSecret();
  const info = { hostname: clip(request.hostname), os: clip(request.os), agentVersion: clip(request.agentVersion) };
  // completeRegistration clears the token only if it is still pending: of two concurrent
  // registrations with one token, exactly one wins.
  if (!(await store.machines.completeRegistration(machine.id, hashSecret(credential), info, now))) throw refused;
  return { machineId: machine.id, agentCredential: credential };
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
  const machine = await store.machines.findByCredentialHash(hashSecret(credential));
  if (!machine || machine.id !== machineId) throw refused;
  return machine;
}
