/** Test certificates made by openssl for a run (agent TLS: test/e2e/tls.e2e.test.ts, test/agent/connection). */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Certificates {
  ca: string;
  otherCa: string;
  /** For 127.0.0.1 and localhost, signed by `ca`. */
  cert: string;
  key: string;
  /** For localhost only (no IP entry), signed by `ca`. */
  nameOnlyCert: string;
  nameOnlyKey: string;
}

/** A CA, server certificates signed by it (see Certificates), and an unrelated CA; files in `dir`. */
export function makeCertificates(dir: string): Certificates {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ecKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const makeCa = (name: string, subject: string) =>
    openssl('req', '-x509', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', subject);
  const makeServer = (name: string, subjectAltName: string) => {
    openssl('req', ...ecKey, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', '/CN=gantry-control-plane');
    writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${subjectAltName}\n`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  makeCa('ca', '/CN=Gantry test CA');
  makeCa('other-ca', '/CN=Some other CA');
  makeServer('server', 'IP:127.0.0.1,DNS:localhost');
  makeServer('name-only', 'DNS:localhost');
  const file = (name: string) => path.join(dir, name);
  return {
    ca: file('ca.pem'),
    otherCa: file('other-ca.pem'),
    cert: file('server.pem'),
    key: file('server.key'),
    nameOnlyCert: file('name-only.pem'),
    nameOnlyKey: file('name-only.key'),
  };
}
