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
