/** The one line that installs an agent (POST /api/machine answers it beside the token). */

/** Shell-safe: IDs, tokens and host names only ever hold these characters; anything else is quoted. */
const PLAIN = /^[A-Za-z0-9._~+/=:,@%[\]-]+$/;
const quote = (value: string) => (PLAIN.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`);

export function agentInstallCommand(options: {
  publicUrl: string;
  agentServer: string;
  token?: string;
  enrollmentKey?: string;
  /** The agent gateway's CA fingerprint, which the agent pins; null: the gateway serves plaintext. */
  caFingerprint?: string | null;
}): string {
  const args = ['--server', quote(options.agentServer)];
  if (options.token) args.push('--token', quote(options.token));
  if (options.enrollmentKey) args.push('--enrollment-key', quote(options.enrollmentKey));
  if (options.caFingerprint) args.push('--ca-fingerprint', quote(options.caFingerprint));
  const base = options.publicUrl.replace(/\/+$/, '');
  return `curl -fsSL ${quote(`${base}/api/agent/install.sh`)} | sudo sh -s -- ${args.join(' ')}`;
}
