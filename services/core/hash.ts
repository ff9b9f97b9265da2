import { createHash, randomBytes } from 'node:crypto';

/** A new high-entropy secret (API keys, registration tokens): 256 random bits, URL-safe. */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 hex: enough for 256-bit random secrets, which cannot be guessed by brute force. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}
