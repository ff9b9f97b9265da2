/**
 * Signed upload URLs of the filesystem backend: HMAC-SHA256 over the blob key and the expiry, so
 * the URL alone is the credential (like an Azure SAS) and changing either part invalidates it.
 * The key lives in <dataDir>/package-upload.key (mode 0600), shared by replicas on one data dir.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

export function signUpload(key: Buffer, blobKey: string, expiresUnixSeconds: number): string {
  return createHmac('sha256', key).update(`${blobKey}\n${expiresUnixSeconds}`).digest('base64url');
}

export function isValidUploadSignature(
  key: Buffer,
  blobKey: string,
  expiresUnixSeconds: number,
  signature: string,
): boolean {
  const expected = Buffer.from(signUpload(key, blobKey, expiresUnixSeconds));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function loadUploadKey(dataDir: string): Promise<Buffer> {
  const file = path.join(dataDir, 'package-upload.key');
  try {
    return Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
  } catch {
    await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
    // 'wx': when another replica wrote it first, keep theirs.
    await fs.writeFile(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' }).catch(() => undefined);
    return Buffer.from((await fs.readFile(file, 'utf8')).trim(), 'base64');
  }
}
