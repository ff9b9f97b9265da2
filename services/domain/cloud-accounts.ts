/**
 * Cloud accounts (contract §3): `{workspaceId, name, type, config}`. The whole config is sealed at
 * rest like Sensitive variable values; reads return it with every secret-looking field set to null.
 *
 * Secret rule (isSecretKey): a property name, compared case-insensitively, is secret when it
 * contains secret, password, passphrase, token, credential, certificate or connectionstring, or
 * ends with "key" (key, apiKey, privateKey, secretAccessKey, jsonKey…; not accessKeyId). The rule
 * applies at every depth, and a secret property is hidden whole even when it holds an object.
 */
import {
  authorize,
  Capability,
  InvalidParameterError,
  newId,
  toPage,
  type PageRequest,
  type Paged,
  type Principal,
} from '../core/index.ts';
import type { CloudAccount } from '../store/index.ts';
import type { DomainDeps } from './deps.ts';
import { visibleResource, visibleWorkspace, withUniqueName } from './scope.ts';

export const CloudAccountType = { Azure: 'Azure', Aws: 'Aws', Gcp: 'Gcp' } as const;
export type CloudAccountType = (typeof CloudAccountType)[keyof typeof CloudAccountType];

export type CloudConfig = Record<string, unknown>;

/** Sealed configs are small credential documents; bound them so a row never balloons. */
export const MAX_CONFIG_BYTES = 64 * 1024;

const SECRET_PARTS = ['secret', 'password', 'passphrase', 'token', 'credential', 'certificate', 'connectionstring'];

export function isSecretKey(key: string): boolean {
  const lower = key.toLowerCase();
  return lower.endsWith('key') || SECRET_PARTS.some((part) => lower.includes(part));
}

const isPlainObject = (value: unknown): value is CloudConfig =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The config as callers may see it: secret properties replaced by null, at every depth. */
export function maskConfig(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskConfig);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key, isSecretKey(key) ? null : maskConfig(inner)]),
  );
}

/**
 * A PUT sends back what a GET showed, secrets as null: a secret property sent as null keeps its
 * stored value, so read-modify-write never wipes a secret. Anything else replaces; omitted
 * properties are removed.
 */
export function mergeConfig(next: unknown, stored: unknown): unknown {
  if (!isPlainObject(next)) return next;
  const previous = isPlainObject(stored) ? stored : {};
  return Object.fromEntries(
    Object.entries(next).map(([key, value]) => {
      if (value === null && isSecretKey(key) && Object.hasOwn(previous, key)) return [key, previous[key]];
      return [key, mergeConfig(value, previous[key])];
    }),
  );
}

export interface CloudAccountView {
  id: string;
  workspaceId: string;
  name: string;
  type: string;
  config: CloudConfig;
}

function readConfig(deps: DomainDeps, account: CloudAccount): CloudConfig {
  const parsed: unknown = JSON.parse(deps.secrets.decrypt(account.configEncrypted));
  return isPlainObject(parsed) ? parsed : {};
}

function sealConfig(deps: DomainDeps, config: unknown): string {
  const json = JSON.stringify(config);
  if (Buffer.byteLength(json, 'utf8') > MAX_CONFIG_BYTES) {
    throw new InvalidParameterError(`Invalid config: larger than ${MAX_CONFIG_BYTES} bytes`, [
      { property: 'config', messages: ['too large'] },
    ]);
  }
  return deps.secrets.encrypt(json);
}

function toView(deps: DomainDeps, account: CloudAccount): CloudAccountView {
  return {
    id: account.id,
    workspaceId: account.workspaceId,
    name: account.name,
    type: account.type,
    config: maskConfig(readConfig(deps, account)) as CloudConfig,
  };
}

async function visibleCloudAccount(
  deps: DomainDeps,
  principal: Principal,
  cloudAccountId: string,
): Promise<CloudAccount> {
  return visibleResource(deps, principal, deps.store.cloudAccounts.get(cloudAccountId), 'cloudAccountId');
}

export async function listCloudAccounts(
  deps: DomainDeps,
  principal: Principal,
  query: { workspaceId: string } & PageRequest,
): Promise<Paged<CloudAccountView>> {
  const workspace = await visibleWorkspace(deps, principal, query.workspaceId);
  authorize(principal, Capability.View);
  const page = await deps.store.cloudAccounts.list(workspace.id, toPage(query));
  return { items: page.items.map((a) => toView(deps, a)), totalCount: page.totalCount };
}

export async function getCloudAccount(
  deps: DomainDeps,
  principal: Principal,
  cloudAccountId: string,
): Promise<CloudAccountView> {
  const account = await visibleCloudAccount(deps, principal, cloudAccountId);
  authorize(principal, Capability.View);
  return toView(deps, account);
}

/** The unmasked config, for the engine when it hands credentials to a step. Never for API reads. */
export async function readCloudAccountConfig(deps: DomainDeps, cloudAccountId: string): Promise<CloudConfig | null> {
  const account = await deps.store.cloudAccounts.get(cloudAccountId);
  return account ? readConfig(deps, account) : null;
}

export async function createCloudAccount(
  deps: DomainDeps,
  principal: Principal,
  input: { workspaceId: string; name: string; type: CloudAccountType; config: CloudConfig },
): Promise<{ cloudAccountId: string }> {
  const workspace = await visibleWorkspace(deps, principal, input.workspaceId);
  authorize(principal, Capability.ManageWorkspace);
  const account: CloudAccount = {
    id: newId(),
    workspaceId: workspace.id,
    name: input.name,
    type: input.type,
    configEncrypted: sealConfig(deps, input.config),
  };
  await withUniqueName('name', input.name, () => deps.store.cloudAccounts.insert(account));
  return { cloudAccountId: account.id };
}

export async function updateCloudAccount(
  deps: DomainDeps,
  principal: Principal,
  input: {
    cloudAccountId: string;
    name?: string | undefined;
    type?: CloudAccountType | undefined;
    config?: CloudConfig | undefined;
  },
): Promise<void> {
  const account = await visibleCloudAccount(deps, principal, input.cloudAccountId);
  authorize(principal, Capability.ManageWorkspace);
  const configEncrypted =
    input.config === undefined ? undefined : sealConfig(deps, mergeConfig(input.config, readConfig(deps, account)));
  await withUniqueName('name', input.name ?? account.name, () =>
    deps.store.cloudAccounts.update(account.id, { name: input.name, type: input.type, configEncrypted }),
  );
}

export async function deleteCloudAccount(
  deps: DomainDeps,
  principal: Principal,
  cloudAccountId: string,
): Promise<void> {
  const account = await visibleCloudAccount(deps, principal, cloudAccountId);
  authorize(principal, Capability.ManageWorkspace);
  await deps.store.cloudAccounts.delete(account.id);
}
