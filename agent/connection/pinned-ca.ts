// How the agent trusts the control plane. Pinned (the default command): the CA whose SHA-256
// fingerprint the registration answer gave is learned from the server's own certificate chain
// once, kept in the agent's home (server-ca.pem, 0600), and is then the only root the agent
// trusts; a server whose chain does not lead to it is refused. Host names are not checked then:
// the CA is the installation's own, so any certificate it signed is the control plane's.
import { readFileSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import path from 'node:path';
import tls, { type PeerCertificate } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { normalizeFingerprint } from '../config.ts';
import { backoffDelayMs, DEFAULT_BACKOFF } from './backoff.ts';

/** Waits `ms`, or less when the signal aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export const PINNED_CA_FILE = 'server-ca.pem';

/** Credentials that trust the pinned CA and check no host name (see channelTrust). */
const pinnedCredentials = new WeakSet<grpc.ChannelCredentials>();

/** Credentials that check the host against the certificate, with the roots they trust (undefined: the system's). */
const hostChecked = new WeakMap<grpc.ChannelCredentials, { roots: Buffer | undefined }>();
/** Per host-checked credentials and IP address: the credentials that check that IP (see channelTrust). */
const ipChecked = new WeakMap<grpc.ChannelCredentials, Map<string, grpc.ChannelCredentials>>();

/** The TLS server name sent instead of an IP address; never checked as a name (see channelTrust). */
const FIXED_SERVER_NAME = 'gantry-control-plane';

/** TLS that trusts `roots` (a CA file's PEM; undefined: the system's CAs) and checks the server's host. */
export function hostCheckedCredentials(roots: Buffer | undefined): grpc.ChannelCredentials {
  const credentials = grpc.credentials.createSsl(roots);
  hostChecked.set(credentials, { roots });
  return credentials;
}

/**
 * How to dial `address` with these credentials: the credentials, and the TLS server name (SNI) to
 * send when it must not be the host. An IP address is not a server name (RFC 6066; Node warns
 * DEP0123 at every agent start that sends one, and grpc-js sends the host). So to an IP a fixed
 * name is sent: pinned credentials check no name; host-checked ones still check the IP, against
 * the certificate's IP entries, through credentials of its own (one per IP, so that the register
 * and session clients share one connection as they do to a host name).
 */
export function channelTrust(
  address: string,
  credentials: grpc.ChannelCredentials,
): { credentials: grpc.ChannelCredentials; serverName: string | null } {
  const host = hostOf(address);
  if (isIP(host) === 0) return { credentials, serverName: null };
  if (pinnedCredentials.has(credentials)) return { credentials, serverName: FIXED_SERVER_NAME };
  const checked = hostChecked.get(credentials);
  if (!checked) return { credentials, serverName: null }; // plaintext: no TLS, no name
  let byIp = ipChecked.get(credentials);
  if (!byIp) ipChecked.set(credentials, (byIp = new Map<string, grpc.ChannelCredentials>()));
  let forIp = byIp.get(host);
  if (!forIp) {
    // grpc-js passes the name it sent; the IP dialled is what the certificate must hold.
    forIp = grpc.credentials.createSsl(checked.roots, null, null, {
      checkServerIdentity: (_sentName, cert) => tls.checkServerIdentity(host, cert),
    });
    byIp.set(host, forIp);
  }
  return { credentials: forIp, serverName: FIXED_SERVER_NAME };
}

/** `host:port` or `[v6]:port` → the host. */
function hostOf(server: string): string {
  return server.slice(0, server.lastIndexOf(':')).replace(/^\[|\]$/g, '');
}

const HANDSHAKE_TIMEOUT_MS = 10_000;

/** The server's certificate does not lead to the pinned CA: the agent must not talk to it. */
export class PinMismatchError extends Error {
  readonly code = 'AGENT_CA_MISMATCH';
  constructor(message: string) {
    super(message);
    this.name = 'PinMismatchError';
  }
}

export interface TrustSettings {
  readonly servers: readonly string[];
  readonly homeDir: string;
  readonly caFile: string | undefined;
  readonly caFingerprint: string | undefined;
  readonly insecure: boolean;
}

function chainOf(leaf: tls.DetailedPeerCertificate): PeerCertificate[] {
  const chain: PeerCertificate[] = [];
  for (let cert: tls.DetailedPeerCertificate | undefined = leaf; cert && cert.raw;) {
    chain.push(cert);
    // A self-signed root is its own issuer.
    cert = cert.issuerCertificate === cert ? undefined : cert.issuerCertificate;
    if (chain.length > 10) break;
  }
  return chain;
}

const fingerprintOf = (cert: PeerCertificate): string => normalizeFingerprint(cert.fingerprint256);

/** The certificate chain a server presents, read without trusting it (only to find the pinned CA in it). */
function presentedChain(server: string): Promise<PeerCertificate[]> {
  const host = hostOf(server);
  const port = Number(server.slice(server.lastIndexOf(':') + 1));
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port,
      rejectUnauthorized: false,
      ALPNProtocols: ['h2'],
      // An IP address is not a server name (RFC 6066).
      ...(isIP(host) === 0 ? { servername: host } : {}),
    });
    socket.setTimeout(HANDSHAKE_TIMEOUT_MS, () => socket.destroy(new Error(`no TLS handshake with ${server}`)));
    socket.once('secureConnect', () => {
      const chain = chainOf(socket.getPeerCertificate(true));
      socket.end();
      resolve(chain);
    });
    socket.once('error', reject);
  });
}

function toPem(raw: Buffer): string {
  return new X509Certificate(raw).toString();
}

function storedCa(file: string, fingerprint: string): string | null {
  try {
    const pem = readFileSync(file, 'utf8');
    return normalizeFingerprint(new X509Certificate(pem).fingerprint256) === fingerprint ? pem : null;
  } catch {
    return null;
  }
}

/**
 * The pinned CA as PEM: from the home, or learned from the first server that answers (retrying
 * while none does). Throws PinMismatchError when a server's chain holds no such certificate.
 */
export async function learnPinnedCa(
  settings: { servers: readonly string[]; homeDir: string; fingerprint: string },
  logger: Logger,
  signal: AbortSignal,
): Promise<string> {
  const file = path.join(settings.homeDir, PINNED_CA_FILE);
  const stored = storedCa(file, settings.fingerprint);
  if (stored) return stored;
  for (let attempt = 0; !signal.aborted; attempt++) {
    for (const server of settings.servers) {
      let chain: PeerCertificate[];
      try {
        chain = await presentedChain(server);
      } catch (error) {
        logger.warn({ server, error: (error as Error).message }, 'control plane unreachable; retrying');
        continue;
      }
      const pinned = chain.find((cert) => fingerprintOf(cert) === settings.fingerprint);
      if (!pinned)
        throw new PinMismatchError(
          `The server at ${server} presented certificates ${chain.map(fingerprintOf).join(', ') || '(none)'}; none is the pinned CA ${settings.fingerprint} (GANTRY_AGENT_CA_FINGERPRINT). Refusing to connect.`,
        );
      const pem = toPem(pinned.raw);
      if (!new X509Certificate(pem).ca)
        throw new PinMismatchError(`The pinned certificate ${settings.fingerprint} is not a CA certificate`);
      writeFileSync(file, pem, { mode: 0o600 });
      logger.info({ server, fingerprint: settings.fingerprint }, 'learned the pinned control-plane CA');
      return pem;
    }
    await pause(backoffDelayMs(attempt, DEFAULT_BACKOFF), signal);
  }
  throw new Error('stopped before the control plane was reachable');
}

/** Channel credentials for the agent's settings (see the file comment); may wait for a server to answer. */
export async function agentChannelCredentials(
  settings: TrustSettings,
  logger: Logger,
  signal: AbortSignal,
): Promise<grpc.ChannelCredentials> {
  if (settings.insecure) {
    logger.warn('GANTRY_AGENT_INSECURE=1: plaintext to the control plane; the credential crosses the network in clear');
    return grpc.credentials.createInsecure();
  }
  if (settings.caFile) return hostCheckedCredentials(readFileSync(settings.caFile));
  if (!settings.caFingerprint) return hostCheckedCredentials(undefined);
  const fingerprint = settings.caFingerprint;
  const ca = await learnPinnedCa({ servers: settings.servers, homeDir: settings.homeDir, fingerprint }, logger, signal);
  const credentials = grpc.credentials.createSsl(Buffer.from(ca), null, null, {
    // Called only once the chain verified against the pinned CA (the only root given); the host
    // name is not checked, and the pinned certificate must be in the chain.
    checkServerIdentity: (_host, cert) =>
      chainOf(cert as tls.DetailedPeerCertificate).some((c) => fingerprintOf(c) === fingerprint)
        ? undefined
        : new PinMismatchError(`The server's certificate chain does not hold the pinned CA ${fingerprint}`),
  });
  pinnedCredentials.add(credentials);
  return credentials;
}
