/**
 * TLS for the agent gateway by default: the control plane's own certificate authority, created at
 * first start in <dataDir>/agent-ca.pem (its certificate and key, mode 0600; replicas share the
 * data folder, and so the CA, as they share master.key), and a server certificate signed by it,
 * made afresh at every start. Agents pin the CA by its SHA-256 fingerprint, which every
 * registration token answer carries; any other certificate is refused. node:crypto makes the
 * keys and the server certificate's signature; node-forge (pure JS, no dependencies) writes the
 * certificates, which node:crypto cannot.
 */
import { generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import forge from 'node-forge';

export interface AgentTlsMaterial {
  /** PEM: the server certificate, then the CA that signed it (agents learn the CA from it). */
  certChain: string;
  /** PEM private key of the server certificate. */
  key: string;
  /** SHA-256 fingerprint of the certificate agents pin (`AB:CD:…`, as node:crypto prints it). */
  caFingerprint: string;
}

export const AGENT_CA_FILE = 'agent-ca.pem';
const CA_YEARS = 20;
const SERVER_YEARS = 2;

/** The SHA-256 fingerprint of a PEM certificate (the first one in `pem`). */
export function certificateFingerprint(pem: string | Buffer): string {
  return new X509Certificate(pem).fingerprint256;
}

/** The certificates of a PEM bundle, in order. */
export function pemCertificates(pem: string): string[] {
  return pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
}

function forgeKeyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: forge.pki.privateKeyFromPem(privateKey.export({ type: 'pkcs1', format: 'pem' }).toString()),
    publicKey: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString()),
  };
}

function newCertificate(publicKey: forge.pki.rsa.PublicKey, years: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  // A positive 128-bit serial (the high bit clear), unique per certificate.
  cert.serialNumber = `0${randomBytes(16).toString('hex').slice(1)}`;
  const now = Date.now();
  // An hour back: a machine whose clock is a little behind still accepts a certificate made now.
  cert.validity.notBefore = new Date(now - 3600_000);
  cert.validity.notAfter = new Date(now + years * 365 * 24 * 3600_000);
  return cert;
}

/**
 * Runs `make` until OpenSSL accepts what it made as a certificate and key (at most 5 times).
 * A control plane once failed to start with OpenSSL refusing its freshly made certificate
 * ("asn1 encoding routines::illegal padding", seen once in a CI run, not reproduced in 600
 * tries): generated material is checked before it is served or stored, so a rare encoding slip
 * costs another key pair instead of a failed start — or, for the CA, a data folder that can
 * never start.
 */
export function acceptedByOpenSsl<T>(make: () => T, pemOf: (made: T) => { cert: string; key: string }): T {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt++) {
    const made = make();
    try {
      createSecureContext(pemOf(made));
      return made;
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

const pemParts = (pem: string) => ({
  cert: pemCertificates(pem)[0] ?? '',
  key: /-----BEGIN RSA PRIVATE KEY-----[\s\S]+?-----END RSA PRIVATE KEY-----/.exec(pem)?.[0] ?? '',
});

function createCa(): string {
  return acceptedByOpenSsl(makeCa, pemParts);
}

function makeCa(): string {
  const keys = forgeKeyPair();
  const cert = newCertificate(keys.publicKey, CA_YEARS);
  const subject = [
    { name: 'commonName', value: `Gantry agent CA ${randomBytes(4).toString('hex')}` },
    { name: 'organizationName', value: 'Gantry' },
  ];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return forge.pki.certificateToPem(cert) + forge.pki.privateKeyToPem(keys.privateKey);
}

function createServerCertificate(caPem: string, names: readonly string[]): { cert: string; key: string } {
  return acceptedByOpenSsl(
    () => makeServerCertificate(caPem, names),
    (made) => made,
  );
}

/**
 * The server certificate has an ECDSA P-256 key, where the CA keeps its RSA one (agents pin the CA,
 * so it never changes): every TLS handshake signs with the server's key, and P-256 signs in about
 * a seventh of RSA-2048's time — a fleet reconnecting after a replica restart is thousands of
 * handshakes on the gateway's one thread. node-forge writes only RSA keys into a certificate, so
 * it lays out the certificate around the CA's public key as a stand-in, the P-256 key node:crypto
 * made takes its place, and node:crypto signs the result with the CA's key.
 */
function makeServerCertificate(caPem: string, names: readonly string[]): { cert: string; key: string } {
  const caCert = forge.pki.certificateFromPem(caPem);
  const caKey = pemParts(caPem).key;
  const keys = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const standIn = caCert.publicKey as forge.pki.rsa.PublicKey;
  const cert = newCertificate(standIn, SERVER_YEARS);
  cert.setSubject([{ name: 'commonName', value: names[0] ?? 'gantry-control-plane' }]);
  cert.setIssuer(caCert.subject.attributes);
  cert.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    // An ECDSA key only signs (the handshake's key exchange is ephemeral): no keyEncipherment.
    { name: 'keyUsage', digitalSignature: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true },
    {
      name: 'subjectAltName',
      altNames: [...new Set(names)].map((name) => (isIP(name) ? { type: 7, ip: name } : { type: 2, value: name })),
    },
  ]);
  cert.siginfo.algorithmOid = cert.signatureOid = forge.pki.oids.sha256WithRSAEncryption!;
  cert.signature = '';
  // The certificate's first part is what is signed (TBSCertificate); the rest is made again below.
  const tbs = (forge.pki.certificateToAsn1(cert).value as forge.asn1.Asn1[])[0]!;
  const der = (node: forge.asn1.Asn1) => forge.asn1.toDer(node).getBytes();
  const parts = tbs.value as forge.asn1.Asn1[];
  const standInDer = der(forge.pki.publicKeyToAsn1(standIn));
  const keyAt = parts.findIndex((part) => der(part) === standInDer);
  if (keyAt < 0) throw new Error('The server certificate has no public key to replace');
  parts[keyAt] = forge.asn1.fromDer(keys.publicKey.export({ type: 'spki', format: 'der' }).toString('binary'));
  cert.tbsCertificate = tbs;
  cert.signature = sign('sha256', Buffer.from(der(tbs), 'binary'), caKey).toString('binary');
  return {
    cert: forge.pki.certificateToPem(cert),
    key: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

/**
 * The CA of this installation: read from the data folder, or created there once. Two replicas
 * starting together each write a candidate and link it into place; the one that loses reads the
 * winner's, so all of them serve certificates of one CA.
 */
async function loadOrCreateCa(dataDir: string): Promise<string> {
  const file = path.join(dataDir, AGENT_CA_FILE);
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await fs.mkdir(dataDir, { recursive: true, mode: 0o755 });
  const candidate = `${file}.${randomBytes(6).toString('hex')}`;
  await fs.writeFile(candidate, createCa(), { mode: 0o600, flag: 'wx' });
  try {
    await fs.link(candidate, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    await fs.rm(candidate, { force: true });
  }
  return fs.readFile(file, 'utf8');
}

/**
 * The gateway's certificate chain and key from the installation's own CA, for these names
 * (DNS names or IP addresses agents may dial; agents that pin the CA do not need them to match).
 */
export async function loadAgentTls(options: { dataDir: string; names: readonly string[] }): Promise<AgentTlsMaterial> {
  const caPem = await loadOrCreateCa(options.dataDir);
  const [caCert] = pemCertificates(caPem);
  if (!caCert || !caPem.includes('PRIVATE KEY'))
    throw new Error(
      `${path.join(options.dataDir, AGENT_CA_FILE)} holds no certificate and key; remove it to make a new CA`,
    );
  const server = createServerCertificate(caPem, options.names);
  return { certChain: `${server.cert}${caCert}\n`, key: server.key, caFingerprint: certificateFingerprint(caCert) };
}
