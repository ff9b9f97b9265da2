/** The control plane's own TLS material is checked with OpenSSL before it is served or stored. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { acceptedByOpenSsl, loadAgentTls } from '../../../services/core/agent-tls.ts';

describe('agent TLS material', () => {
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
