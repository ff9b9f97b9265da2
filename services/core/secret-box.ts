/**
 * Encrypts Sensitive values at rest (AES-256-GCM). The key comes from GANTRY_MASTER_KEY or
 * <dataDir>/master.key, created on first start with mode 0600.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export interface SecretBox {
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
}

const VERSION = 'v1';

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('The master key must be 32 bytes (base64-encoded in GANTRY_MASTER_KEY)');
  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [VERSION, iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(
        ':',
      );
    },
    decrypt(sealed) {
      const [version, iv, tag, body] = sealed.split(':');
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('Unreadable sealed value');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * What the database keeps to know its key again (the installation's first start records it): an
 * HMAC of a constant under the key, which tells nothing about the key itself.
 */
export function masterKeyCheck(key: Buffer): string {
  return createHmac('sha256', key).update('gantry master key check v1').digest('hex');
}

export async function loadMasterKey(options: { masterKey: string | null; dataDir: string }): Promise<Buffer> {
  if (options.masterKey) return Buffer.from(options.masterKey, 'base64');
  const file = path.join(options.dataDir, 'master.key');
  try {
    return Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
  } catch {
    await fs.mkdir(options.dataDir, { recursive: true, mode: 0o755 });
    const key = randomBytes(32);
    // 'wx': if another replica wrote it first, fail and read theirs instead of overwriting.
    await fs.writeFile(file, key.toString('base64'), { mode: 0o600, flag: 'wx' }).catch(() => undefined);
    return Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
  }
}

/**
 * Where a rotation (services/rotate-master-key.ts) puts the new key before its transaction commits;
 * renamed to master.key once it has. A crash between the two leaves both files.
 */
export function nextMasterKeyFile(dataDir: string): string {
  return path.join(dataDir, 'master.key.next');
}

/** Writes the new key for a rotation, 0600, on disk before the rotation commits. */
export async function writeNextMasterKey(dataDir: string, key: Buffer): Promise<void> {
  const file = nextMasterKeyFile(dataDir);
  await fs.rm(file, { force: true });
  const handle = await fs.open(file, 'wx', 0o600);
  try {
    await handle.writeFile(key.toString('base64'));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes the new key master.key (the rotation committed). */
export async function adoptNextMasterKey(dataDir: string): Promise<void> {
  await fs.rename(nextMasterKeyFile(dataDir), path.join(dataDir, 'master.key'));
}

/**
 * Finishes what an interrupted rotation left in the data folder: a master.key.next whose check is
 * the recorded one (the rotation committed) becomes master.key; any other is removed (it did not).
 */
export async function settleRotatedKeyFile(
  dataDir: string,
  recordedCheck: string | null,
): Promise<'adopted' | 'discarded' | null> {
  const file = nextMasterKeyFile(dataDir);
  const text = await fs.readFile(file, 'utf8').catch(() => null);
  if (text === null) return null;
  const key = Buffer.from(text.trim(), 'base64');
  if (recordedCheck !== null && key.length === 32 && masterKeyCheck(key) === recordedCheck) {
    await adoptNextMasterKey(dataDir);
    return 'adopted';
  }
  await fs.rm(file, { force: true });
  return 'discarded';
}
