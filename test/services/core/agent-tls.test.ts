/** The control plane's own TLS material is checked with OpenSSL before it is served or stored. */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { acceptedByOpenSsl, loadAgentTls, pemCertificates } from '../../../services/core/agent-tls.ts';

describe('agent TLS material', () => {
  it('serves a P-256 certificate made at each start, signed by the installation CA, which stays', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-tls-'));
    try {
      const first = await loadAgentTls({ dataDir: dir, names: ['localhost', '127.0.0.1'] });
      const again = await loadAgentTls({ dataDir: dir, names: ['localhost', '127.0.0.1'] });
      const [leaf, ca, ...rest] = pemCertificates(first.certChain).map((pem) => new X509Certificate(pem));
      expect(rest).toEqual([]);
      expect(leaf!.publicKey.asymmetricKeyType).toBe('ec');
      expect(leaf!.publicKey.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
      expect(leaf!.checkPrivateKey(createPrivateKey(first.key))).toBe(true);
      expect(leaf!.checkIssued(ca!)).toBe(true);
      expect(leaf!.verify(ca!.publicKey)).toBe(true);
      expect(leaf!.subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1');
      expect(leaf!.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
      expect(ca!.ca).toBe(true);
      expect(again.caFingerprint).toBe(first.caFingerprint);
      expect(again.caFingerprint).toBe(ca!.fingerprint256);
      expect(pemCertificates(again.certChain)[0]).not.toBe(pemCertificates(first.certChain)[0]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is made again when OpenSSL refuses what was made, and the refusal surfaces when it keeps refusing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'gantry-tls-'));
    try {
      const good = await loadAgentTls({ dataDir: dir, names: ['localhost', '127.0.0.1', '::1'] });
      const broken = { cert: good.certChain.replace('MII', 'AAA'), key: good.key };
      const made: string[] = [];
      const chosen = acceptedByOpenSsl(
        () => (made.push('x'), made.length < 3 ? broken : { cert: good.certChain, key: good.key }),
        (pair) => pair,
      );
      expect(made).toHaveLength(3);
      expect(chosen.cert).toBe(good.certChain);
      expect(() => createSecureContext(chosen)).not.toThrow();
      expect(() =>
        acceptedByOpenSsl(
          () => broken,
          (pair) => pair,
        ),
      ).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
