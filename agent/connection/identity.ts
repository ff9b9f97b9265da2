// The agent's identity (machine id + credential) in GANTRY_AGENT_HOME/identity.json, mode 0600:
// the credential is a secret as good as the registration token it replaced.
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface AgentIdentity {
  readonly machineId: string;
  readonly credential: string;
}

export function identityFile(homeDir: string): string {
  return path.join(homeDir, 'identity.json');
}

export function loadIdentity(homeDir: string): AgentIdentity | undefined {
  let text: string;
  try {
    text = readFileSync(identityFile(homeDir), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = JSON.parse(text) as Partial<AgentIdentity>;
  if (typeof parsed.machineId !== 'string' || typeof parsed.credential !== 'string') {
    throw new Error(`${identityFile(homeDir)} is damaged: delete it and register the agent again with a new token`);
  }
  return { machineId: parsed.machineId, credential: parsed.credential };
}

export function saveIdentity(homeDir: string, identity: AgentIdentity): void {
  const file = identityFile(homeDir);
  const temporary = `${file}.tmp`;
  writeFileSync(temporary, JSON.stringify(identity, null, 2), { mode: 0o600 });
  chmodSync(temporary, 0o600); // the umask may have widened nothing, but an older tmp file may exist
  renameSync(temporary, file);
}
