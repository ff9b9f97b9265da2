/**
 * Where the server is and who we are, from flags, else GANTRY_* variables, else the Jaws SDK's
 * JAWS_* variables (JAWS_API_BASE_URL ends in /api), so an existing pipeline switches to Gantry
 * by changing one URL. Parsed once; nothing else reads process.env for these.
 */
import { UsageError } from './exit-codes.ts';
import { parseDuration } from './duration.ts';

export interface GlobalOptions {
  url?: string;
  accountId?: string;
  apiKey?: string;
  workspace?: string;
  output: 'text' | 'json';
  verbose?: boolean;
}

export interface Connection {
  baseUrl: string;
  accountId: string;
  apiKey: string;
  /** How long idempotent reads are retried while the server is unreachable or answers 5xx. */
  retryBudgetMs: number;
}

export const DEFAULT_RETRY_BUDGET_MS = 30_000;

type Env = Record<string, string | undefined>;

function first(...values: Array<string | undefined>): string | undefined {
  return values.find((v) => v !== undefined && v.trim() !== '')?.trim();
}

export function resolveConnection(options: GlobalOptions, env: Env): Connection {
  const baseUrl = first(options.url, env.GANTRY_URL, env.JAWS_API_BASE_URL);
  const accountId = first(options.accountId, env.GANTRY_ACCOUNT_ID, env.JAWS_API_LOGIN);
  const apiKey = first(options.apiKey, env.GANTRY_API_KEY, env.JAWS_API_PASSWORD);
  const missing = [
    baseUrl ? null : '--url (or GANTRY_URL, JAWS_API_BASE_URL)',
    accountId ? null : '--account-id (or GANTRY_ACCOUNT_ID, JAWS_API_LOGIN)',
    apiKey ? null : '--api-key (or GANTRY_API_KEY, JAWS_API_PASSWORD)',
  ].filter((m) => m !== null);
  if (missing.length > 0) throw new UsageError(`Missing ${missing.join(', ')}`);
  let parsed: URL;
  try {
    parsed = new URL(baseUrl!);
  } catch {
    throw new UsageError(`--url: '${baseUrl}' is not a URL (example: https://gantry.example.com)`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`--url: '${baseUrl}' must start with http:// or https://`);
  const retry = first(env.GANTRY_RETRY_TIMEOUT);
  return {
    baseUrl: baseUrl!,
    accountId: accountId!,
    apiKey: apiKey!,
    retryBudgetMs: retry === undefined ? DEFAULT_RETRY_BUDGET_MS : parseDuration(retry, 'GANTRY_RETRY_TIMEOUT'),
  };
}
