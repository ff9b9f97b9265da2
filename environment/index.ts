/**
 * Every environment variable Gantry reads (README's configuration table), as ONE TypeBox schema
 * shared by the control plane (services/config.ts) and the agent (agent/config.ts). This folder
 * sits beside them, importing nothing of either, so the agent can use it without reaching into
 * services/ (eslint.config.js LAYERS).
 *
 * Each variable's schema carries `accepted`: the sentence a refusal prints, so a bad value stops
 * start-up with the variable's name, the value given and what would have been accepted.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { FormatRegistry, Type, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** True for a URL whose scheme is one of `schemes` and which names a host. */
function isUrl(raw: string, schemes: readonly string[]): boolean {
  try {
    const url = new URL(raw);
    return schemes.includes(url.protocol.slice(0, -1)) && url.hostname !== '';
  } catch {
    return false;
  }
}

/** libpq's form for a Unix socket, which WHATWG URL refuses: postgres://user:pw@/db?host=/socket/folder */
const POSTGRES_SOCKET_URL = /^postgres(ql)?:\/\/([^@/]*@)?\/[^?]*\?(.*&)?host=%2F/i;

const HOST_PORT = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/;

function isHostPort(raw: string): boolean {
  const port = Number(HOST_PORT.exec(raw.trim())?.[2] ?? NaN);
  return port > 0 && port < 65536;
}

/** A regular file this process can read now: checked at start rather than at the first agent's connection. */
function isReadableFile(file: string): boolean {
  try {
    accessSync(file, constants.R_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

// Formats are a process-wide registry in TypeBox; registering twice (two bundles) is harmless.
FormatRegistry.Set('gantry-postgres-url', (v) => isUrl(v, ['postgres', 'postgresql']) || POSTGRES_SOCKET_URL.test(v));
FormatRegistry.Set('gantry-nats-urls', (v) =>
  v.split(',').every((one) => isUrl(one.trim(), ['nats', 'tls', 'ws', 'wss'])),
);
FormatRegistry.Set('gantry-http-url', (v) => isUrl(v, ['http', 'https']));
FormatRegistry.Set('gantry-host-ports', (v) => {
  const list = v.split(',').filter((s) => s.trim() !== '');
  return list.length > 0 && list.every(isHostPort);
});
FormatRegistry.Set('gantry-readable-file', isReadableFile);
FormatRegistry.Set('gantry-sha256-fingerprint', (v) => /^[0-9a-f]{64}$/.test(normalizeFingerprint(v)));
FormatRegistry.Set(
  'gantry-base64-32',
  (v) => /^[A-Za-z0-9+/]+={0,2}$/.test(v) && Buffer.from(v, 'base64').length === 32,
);

/** `AB:CD:…`, `abcd…` or `sha256:abcd…` → `abcd…`: how a SHA-256 certificate fingerprint may be written. */
export function normalizeFingerprint(fingerprint: string): string {
  return fingerprint
    .trim()
    .replace(/^sha-?256:/i, '')
    .replaceAll(':', '')
    .toLowerCase();
}

/** A switch: 1/true on, 0/false off. */
const flag = (accepted: string) =>
  Type.Union(
    ['0', '1', 'true', 'false'].map((value) => Type.Literal(value)),
    { accepted },
  );

const port = (accepted = 'a port number from 0 to 65535 (0 picks a free port)') =>
  Type.Integer({ minimum: 0, maximum: 65535, accepted });
const logLevel = Type.Union(
  LOG_LEVELS.map((level) => Type.Literal(level)),
  { accepted: `one of ${LOG_LEVELS.join(', ')}` },
);
const text = (accepted = 'any non-empty text') => Type.String({ minLength: 1, accepted });
/** `secret`: a refusal names the variable but never prints its value. */
const secretText = () => Type.String({ minLength: 1, accepted: 'any non-empty text', secret: true });
const readableFile = (what: string) =>
  Type.String({ format: 'gantry-readable-file', accepted: `the path of a readable ${what} file` });

/** The schema. Unset and empty variables are both "not set" (compose writes `${X:-}`); defaults live in the config modules. */
export const ENVIRONMENT = Type.Object({
  // Control plane
  GANTRY_PORT: port('a port number from 0 to 65535'),
  GANTRY_GRPC_PORT: port(),
  GANTRY_GRPC_TLS_CERT_FILE: readableFile('PEM certificate chain'),
  GANTRY_GRPC_TLS_KEY_FILE: readableFile('PEM private key'),
  GANTRY_GRPC_INSECURE: flag('1 (the agent gateway serves plaintext: behind a TLS-terminating proxy only) or 0'),
  GANTRY_HOST: Type.String({
    pattern: '^(\\[[0-9a-fA-F:]+\\]|[0-9a-fA-F:]*:[0-9a-fA-F:]*|[A-Za-z0-9.-]+)$',
    accepted: 'a host name or an IP address (e.g. 0.0.0.0, 127.0.0.1, ::)',
  }),
  GANTRY_DATA_DIR: text('a folder path'),
  GANTRY_AGENT_BUNDLE_DIR: text('a folder path (the output of npm run build:agent)'),
  GANTRY_LOCAL_AGENT: Type.Union(
    ['1', '0', 'true', 'false', 'yes', 'no'].map((v) => Type.Literal(v)),
    { accepted: '1, true or yes (or 0, false, no)' },
  ),
  GANTRY_BOOTSTRAP_ENROLLMENT_KEY: Type.String({
    pattern: '^[A-Za-z0-9._~+/=-]{32,512}$',
    accepted: '32 to 512 of A-Z a-z 0-9 . _ ~ + / = - (e.g. openssl rand -hex 24)',
    secret: true,
  }),
  DATABASE_URL: Type.String({
    format: 'gantry-postgres-url',
    accepted:
      'a postgres:// or postgresql:// URL with a host or ?host=<socket folder> (e.g. postgres://gantry:secret@db:5432/gantry)',
    secret: true,
  }),
  GANTRY_EMBEDDED_PG_PORT: port(),
  NATS_URL: Type.String({
    format: 'gantry-nats-urls',
    accepted: 'nats://host:port (or tls://, ws://, wss://), several separated by commas',
  }),
  GANTRY_NATS_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$', accepted: '1-64 of A-Z a-z 0-9 _ -' }),
  GANTRY_BOOTSTRAP_ACCOUNT_ID: text(),
  GANTRY_BOOTSTRAP_API_KEY: secretText(),
  GANTRY_MASTER_KEY: Type.String({ format: 'gantry-base64-32', accepted: 'base64 of exactly 32 bytes', secret: true }),
  GANTRY_AZURE_STORAGE_CONNECTION_STRING: Type.String({
    pattern: 'AccountName=[^;]+.*AccountKey=|AccountKey=[^;]+.*AccountName=',
    accepted: 'an Azure Storage connection string with AccountName and AccountKey',
    secret: true,
  }),
  GANTRY_AZURE_STORAGE_CONTAINER: Type.String({
    pattern: '^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$',
    accepted: 'an Azure container name: 3-63 of a-z 0-9 -, starting and ending with a letter or digit',
  }),
  GANTRY_AGENT_LOST_TIMEOUT_SECONDS: Type.Integer({
    minimum: 1,
    maximum: 86_400,
    accepted: 'a whole number of seconds from 1 to 86400',
  }),
  GANTRY_AGENT_HEARTBEATS_PER_SECOND: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    accepted: 'a whole number of heartbeats a second from 1 to 1000000',
  }),
  GANTRY_LOG_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 36_500,
    accepted: 'a whole number of days from 1 to 36500 (unset: deployment logs are kept forever)',
  }),
  GANTRY_DB_POOL_MAX: Type.Integer({
    minimum: 1,
    maximum: 1_000,
    accepted: 'a whole number of connections from 1 to 1000',
  }),
  GANTRY_HEAP_MB: Type.Integer({ minimum: 256, maximum: 1_048_576, accepted: 'a whole number of MiB from 256' }),
  GANTRY_PUBLIC_URL: Type.String({
    format: 'gantry-http-url',
    accepted: 'an http:// or https:// URL (e.g. https://gantry.example.com)',
  }),
  GANTRY_LOG_LEVEL: logLevel,
  GANTRY_METRICS_PORT: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Literal('off')], {
    accepted: 'a port number from 0 to 65535 (0 picks a free port), or off',
  }),
  // Agent
  GANTRY_SERVER: Type.String({
    format: 'gantry-host-ports',
    accepted: 'host:port (e.g. gantry.example.com:8081), several separated by commas',
  }),
  GANTRY_AGENT_TOKEN: secretText(),
  GANTRY_AGENT_ENROLLMENT_KEY: secretText(),
  GANTRY_AGENT_NAME: Type.String({
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$',
    accepted: 'a machine name: up to 100 of A-Z a-z 0-9 . _ -, starting with a letter or digit',
  }),
  GANTRY_AGENT_HOME: text('a folder path'),
  GANTRY_AGENT_CA_FILE: readableFile('PEM CA certificate'),
  GANTRY_AGENT_CA_FINGERPRINT: Type.String({
    format: 'gantry-sha256-fingerprint',
    accepted: 'a SHA-256 fingerprint: 64 hex digits, colons and a sha256: prefix allowed',
  }),
  GANTRY_AGENT_INSECURE: flag('1 (plaintext, for a gateway started with GANTRY_GRPC_INSECURE=1) or 0'),
  GANTRY_AGENT_RETENTION_DAYS: Type.Number({
    exclusiveMinimum: 0,
    maximum: 36_500,
    accepted: 'a number of days above 0 (e.g. 7 or 0.5)',
  }),
  GANTRY_AGENT_MAX_UNPACKED_BYTES: Type.Integer({
    minimum: 1,
    maximum: Number.MAX_SAFE_INTEGER,
    accepted: 'a whole number of bytes above 0 (e.g. 8589934592)',
  }),
  GANTRY_AGENT_LOG_LEVEL: logLevel,
  GANTRY_AGENT_SHUTDOWN_GRACE_MS: Type.Integer({
    minimum: 0,
    maximum: 3_600_000,
    accepted: 'a whole number of milliseconds from 0 to 3600000',
  }),
});

export type VariableName = keyof typeof ENVIRONMENT.properties;

/** The variables the control plane reads, and those the agent reads: two views of the one schema. */
export const SERVER_VARIABLES = [
  'GANTRY_PORT',
  'GANTRY_GRPC_PORT',
  'GANTRY_GRPC_TLS_CERT_FILE',
  'GANTRY_GRPC_TLS_KEY_FILE',
  'GANTRY_GRPC_INSECURE',
  'GANTRY_HOST',
  'GANTRY_DATA_DIR',
  'DATABASE_URL',
  'GANTRY_EMBEDDED_PG_PORT',
  'NATS_URL',
  'GANTRY_NATS_PREFIX',
  'GANTRY_BOOTSTRAP_ACCOUNT_ID',
  'GANTRY_BOOTSTRAP_API_KEY',
  'GANTRY_MASTER_KEY',
  'GANTRY_AZURE_STORAGE_CONNECTION_STRING',
  'GANTRY_AZURE_STORAGE_CONTAINER',
  'GANTRY_AGENT_LOST_TIMEOUT_SECONDS',
  'GANTRY_AGENT_HEARTBEATS_PER_SECOND',
  'GANTRY_DB_POOL_MAX',
  'GANTRY_LOG_RETENTION_DAYS',
  'GANTRY_HEAP_MB',
  'GANTRY_PUBLIC_URL',
  'GANTRY_LOG_LEVEL',
  'GANTRY_METRICS_PORT',
  'GANTRY_AGENT_BUNDLE_DIR',
  'GANTRY_LOCAL_AGENT',
  'GANTRY_BOOTSTRAP_ENROLLMENT_KEY',
] as const satisfies readonly VariableName[];

export const AGENT_VARIABLES = [
  'GANTRY_SERVER',
  'GANTRY_AGENT_TOKEN',
  'GANTRY_AGENT_ENROLLMENT_KEY',
  'GANTRY_AGENT_NAME',
  'GANTRY_AGENT_HOME',
  'GANTRY_AGENT_CA_FILE',
  'GANTRY_AGENT_CA_FINGERPRINT',
  'GANTRY_AGENT_INSECURE',
  'GANTRY_AGENT_RETENTION_DAYS',
  'GANTRY_AGENT_MAX_UNPACKED_BYTES',
  'GANTRY_AGENT_LOG_LEVEL',
  'GANTRY_AGENT_SHUTDOWN_GRACE_MS',
] as const satisfies readonly VariableName[];

/** A value refused at start: `problems` has one line per bad variable. */
export class ConfigurationError extends Error {
  readonly code = 'CONFIGURATION_INVALID';
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.problems = problems;
    this.name = 'ConfigurationError';
  }
}

/** Exit status of a process stopped by a bad configuration (sysexits EX_CONFIG): supervisors need not retry it. */
export const EXIT_CONFIGURATION = 78;

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** Environment text → the schema's type: only plain decimal numbers become numbers ("0x10" and "1e" stay text and are refused). */
function coerce(schema: TSchema, raw: string): unknown {
  const members = (schema as { anyOf?: TSchema[] }).anyOf ?? [schema];
  const numeric = members.some((member) => ['integer', 'number'].includes(String((member as { type?: unknown }).type)));
  return numeric && NUMBER.test(raw.trim()) ? Number(raw.trim()) : raw;
}

type Values<P extends TProperties> = { [K in keyof P]?: Static<P[K]> };

/**
 * Reads and checks the `names` variables of `env` against the schema. Returns the set ones, typed;
 * throws one ConfigurationError listing every refused variable (not just the first).
 */
export function readEnvironment<const N extends VariableName>(
  env: Record<string, string | undefined>,
  names: readonly N[],
): Values<Pick<(typeof ENVIRONMENT)['properties'], N>> {
  const schema: TObject = ENVIRONMENT;
  const values: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of names) {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') continue;
    const property = schema.properties[name];
    const value = coerce(property, raw);
    if (Value.Check(property, value)) {
      values[name] = value;
    } else {
      const accepted = (property as { accepted?: string }).accepted ?? 'see README';
      // A secret's value is not echoed: the message may end up in a log.
      const shown = (property as { secret?: boolean }).secret ? '(value hidden)' : `'${raw}'`;
      problems.push(`${name}=${shown} is not accepted: expected ${accepted}`);
    }
  }
  if (problems.length > 0) throw new ConfigurationError(problems);
  return values as Values<Pick<(typeof ENVIRONMENT)['properties'], N>>;
}
