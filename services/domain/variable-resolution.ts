/**
 * Variable resolution (contract §3), pure: pick one value per variable name for a deployment
 * target, then substitute `#{…}` references. No I/O, so the engine and the release snapshot share
 * one implementation and it can be unit-tested exhaustively.
 *
 * Decisions where the contract is silent:
 * - Names match case-insensitively (they are unique case-insensitively in the store).
 * - Specificity compares the scoped dimensions lexicographically in the order
 *   step > machine > tag > environment > channel: a step-scoped value beats a value scoped to
 *   machine + environment. Only at equal specificity does the source decide (project beats
 *   workspace); after that, the value whose filters name fewer IDs (narrower, compared in the
 *   same order) wins; after that, the earlier candidate in the caller's order (store order:
 *   oldest first) wins, so the result is deterministic.
 * - A filter of a dimension the target does not have (say, a machine filter while resolving at
 *   deployment level, with no machine) does not match.
 * - Unknown references (`#{Nope}`, a system value the caller did not supply) are left as-is,
 *   so scripts that use `#{…}` for their own purposes (Ruby, some templating) survive.
 *   `##{X}` is an escape and produces the literal text `#{X}`.
 * - System values are substituted but never expanded further: release notes are user text and
 *   must not be able to pull in a Sensitive value by naming it.
 */
import { InvalidParameterError } from '../core/index.ts';

export const VariableSource = { Project: 'Project', Workspace: 'Workspace' } as const;
export type VariableSource = (typeof VariableSource)[keyof typeof VariableSource];

/** The scope of one value. An empty list means "not scoped on this dimension". */
export interface ValueFilters {
  environmentIds: readonly string[];
  machineIds: readonly string[];
  /** Matches a machine that has every tag of at least one set (same rule as step tag filters). */
  tagFilter: ReadonlyArray<{ tagIds: readonly string[] }>;
  stepIds: readonly string[];
  channelIds: readonly string[];
}

/** One stored value of one variable, decrypted, as the resolver sees it. */
export interface CandidateValue {
  name: string;
  sensitive: boolean;
  value: string;
  source: VariableSource;
  filters: ValueFilters;
  variableValueId?: string | undefined;
}

/** Where the values are being resolved for; absent dimensions match only unscoped filters. */
export interface ResolutionTarget {
  environmentId?: string | null | undefined;
  machineId?: string | null | undefined;
  machineTagIds?: readonly string[] | undefined;
  stepId?: string | null | undefined;
  channelId?: string | null | undefined;
}

export interface ResolvedVariable {
  name: string;
  value: string;
  sensitive: boolean;
  source: VariableSource;
  variableValueId?: string | undefined;
}

/** Chosen values keyed by lower-cased name. */
export type ResolvedVariables = ReadonlyMap<string, ResolvedVariable>;

export const SYSTEM_VALUE_NAMES = [
  'ProjectName',
  'ReleaseVersion',
  'ReleaseNotes',
  'ChannelName',
  'EnvironmentName',
  'MachineName',
  'DeploymentId',
  'StepName',
  'PackageFolder',
] as const;
export type SystemValueName = (typeof SYSTEM_VALUE_NAMES)[number];

/** `#{CONTEXT.X}` values. Undefined: not known here (the reference stays as-is); null: empty. */
export type SystemValues = Partial<Record<SystemValueName, string | null>>;

/** A variable's value refers (directly or through others) back to itself. */
export class VariableCycleError extends InvalidParameterError {
  readonly cycle: string[];
  constructor(cycle: string[]) {
    super(`Variable reference cycle: ${cycle.join(' -> ')}`, [
      { property: 'variables', messages: [`cycle ${cycle.join(' -> ')}`] },
    ]);
    this.cycle = cycle;
  }
}

/** Expanding nested references would produce an absurdly large value (e.g. doubling chains). */
export class VariableExpansionTooLargeError extends InvalidParameterError {
  constructor(name: string, limit: number) {
    super(`Expanding variable '${name}' exceeds ${limit} characters`, [
      { property: 'variables', messages: [`'${name}' expands too far`] },
    ]);
  }
}

export const MAX_EXPANDED_LENGTH = 4 * 1024 * 1024;
/** Deeper nesting than this is refused rather than risking a stack overflow (a 500). */
export const MAX_NESTING_DEPTH = 100;

// Module level, not a closure inside matches(): it runs for every value × task of a dispatch,
// and under tsx each closure created also costs a name definition (esbuild's keepNames).
function within(ids: readonly string[], id: string | null | undefined): boolean {
  return ids.length === 0 || (id != null && ids.includes(id));
}

function matches(filters: ValueFilters, target: ResolutionTarget): boolean {
  if (!within(filters.environmentIds, target.environmentId)) return false;
  if (!within(filters.machineIds, target.machineId)) return false;
  if (!within(filters.stepIds, target.stepId)) return false;
  if (!within(filters.channelIds, target.channelId)) return false;
  if (filters.tagFilter.length > 0) {
    if (target.machineId == null) return false;
    const tags = target.machineTagIds ?? [];
    if (!filters.tagFilter.some((set) => set.tagIds.length > 0 && set.tagIds.every((id) => tags.includes(id))))
      return false;
  }
  return true;
}

/** The filter dimensions in precedence order, as list sizes (0 = unscoped). */
function dimensions(filters: ValueFilters): number[] {
  const tagCount = filters.tagFilter.reduce((n, set) => n + set.tagIds.length, 0);
  return [
    filters.stepIds.length,
    filters.machineIds.length,
    tagCount,
    filters.environmentIds.length,
    filters.channelIds.length,
  ];
}

/** Negative when a should win over b. */
function compareCandidates(a: CandidateValue, b: CandidateValue): number {
  const da = dimensions(a.filters);
  const db = dimensions(b.filters);
  for (let i = 0; i < da.length; i++) {
    const scopedA = (da[i] ?? 0) > 0 ? 1 : 0;
    const scopedB = (db[i] ?? 0) > 0 ? 1 : 0;
    if (scopedA !== scopedB) return scopedB - scopedA;
  }
  if (a.source !== b.source) return a.source === VariableSource.Project ? -1 : 1;
  for (let i = 0; i < da.length; i++) {
    const sizeA = da[i] ?? 0;
    const sizeB = db[i] ?? 0;
    if (sizeA !== sizeB) return sizeA - sizeB;
  }
  return 0;
}

/** Picks, for each variable name, the most specific value whose every filter matches the target. */
export function resolveVariables(candidates: readonly CandidateValue[], target: ResolutionTarget): ResolvedVariables {
  const best = new Map<string, CandidateValue>();
  for (const candidate of candidates) {
    if (!matches(candidate.filters, target)) continue;
    const key = candidate.name.toLowerCase();
    const current = best.get(key);
    // Strictly better only: on a full tie the earlier candidate keeps its place.
    if (!current || compareCandidates(candidate, current) < 0) best.set(key, candidate);
  }
  const resolved = new Map<string, ResolvedVariable>();
  for (const [key, c] of best) {
    resolved.set(key, {
      name: c.name,
      value: c.value,
      sensitive: c.sensitive,
      source: c.source,
      variableValueId: c.variableValueId,
    });
  }
  return resolved;
}

// `##{` (escape) or `#{name}`; names cannot contain braces or line breaks.
const REFERENCE = /##\{|#\{([^{}\r\n]+)\}/g;
const SYSTEM_KEYS = new Map(SYSTEM_VALUE_NAMES.map((n) => [n.toLowerCase(), n]));

/**
 * Substitutes `#{Name}`, `#{VAR.Name}` and `#{CONTEXT.X}` references. Variable values expand
 * recursively (memoized); a cycle throws VariableCycleError naming it.
 */
export class VariableSubstitution {
  readonly #variables: ResolvedVariables;
  readonly #system: SystemValues;
  readonly #expanded = new Map<string, string>();

  constructor(variables: ResolvedVariables, system: SystemValues = {}) {
    this.#variables = variables;
    this.#system = system;
  }

  /** Replaces every known reference in `text`. */
  substitute(text: string): string {
    return this.#substitute(text, []);
  }

  /** The fully expanded value of a variable, or undefined when no value applies. */
  valueOf(name: string): string | undefined {
    const key = name.toLowerCase();
    return this.#variables.has(key) ? this.#expand(key, []) : undefined;
  }

  /** Every resolved variable, fully expanded; throws on any cycle, even among unused variables. */
  expandAll(): ResolvedVariable[] {
    return [...this.#variables.entries()].map(([key, v]) => ({ ...v, value: this.#expand(key, []) }));
  }

  /** Plain-text values of Sensitive variables, for maskSecrets. */
  sensitiveValues(): string[] {
    return [...this.#variables.values()].filter((v) => v.sensitive).map((v) => v.value);
  }

  #substitute(text: string, stack: string[]): string {
    return text.replace(REFERENCE, (whole: string, reference: string | undefined) => {
      if (reference === undefined) return '#{';
      const replaced = this.#lookup(reference.trim(), stack);
      return replaced ?? whole;
    });
  }

  #lookup(reference: string, stack: string[]): string | undefined {
    const lower = reference.toLowerCase();
    if (lower.startsWith('context.')) {
      const systemName = SYSTEM_KEYS.get(lower.slice('context.'.length));
      if (systemName !== undefined && this.#system[systemName] !== undefined) return this.#system[systemName] ?? '';
    }
    if (lower.startsWith('var.')) {
      const key = lower.slice('var.'.length);
      if (this.#variables.has(key)) return this.#expand(key, stack);
    }
    // A variable may itself be named "VAR.x" or "CONTEXT.x"; the full name is the fallback.
    if (this.#variables.has(lower)) return this.#expand(lower, stack);
    return undefined;
  }

  #expand(key: string, stack: string[]): string {
    const done = this.#expanded.get(key);
    if (done !== undefined) return done;
    const variable = this.#variables.get(key);
    if (!variable) return '';
    const at = stack.indexOf(key);
    if (at >= 0) {
      const names = [...stack.slice(at), key].map((k) => this.#variables.get(k)?.name ?? k);
      throw new VariableCycleError(names);
    }
    if (stack.length >= MAX_NESTING_DEPTH) {
      throw new InvalidParameterError(
        `Variable '${variable.name}' is nested more than ${MAX_NESTING_DEPTH} references deep`,
        [{ property: 'variables', messages: [`'${variable.name}' is nested too deeply`] }],
      );
    }
    const value = this.#substitute(variable.value, [...stack, key]);
    if (value.length > MAX_EXPANDED_LENGTH)
      throw new VariableExpansionTooLargeError(variable.name, MAX_EXPANDED_LENGTH);
    this.#expanded.set(key, value);
    return value;
  }
}

/**
 * Octopus Deploy's names for the same system values, as scripts brought over from it write them
 * (octopus.com/docs/projects/variables/system-variables). Lower-cased.
 */
const OCTOPUS_NAMES = new Map<string, SystemValueName>([
  ['octopus.project.name', 'ProjectName'],
  ['octopus.release.number', 'ReleaseVersion'],
  ['octopus.release.notes', 'ReleaseNotes'],
  ['octopus.release.channel.name', 'ChannelName'],
  ['octopus.environment.name', 'EnvironmentName'],
  ['octopus.machine.name', 'MachineName'],
  ['octopus.deployment.id', 'DeploymentId'],
  ['octopus.step.name', 'StepName'],
  ['octopus.action.name', 'StepName'],
  ['octopus.action.package.installationdirectorypath', 'PackageFolder'],
]);

/** A reference that names a system value in a form that does not resolve to it. */
export interface MisnamedSystemReference {
  /** The name as written: `PackageFolder`, `Octopus.Release.Number`. */
  written: string;
  system: SystemValueName;
}

/**
 * System values named without their `CONTEXT.` prefix (`#{PackageFolder}`) or by Octopus's name
 * (`#{Octopus.Release.Number}`), where no variable has that name (`variableNames` lower-cased),
 * each once, as written. Such a reference is left as written like any unknown one, and in a shell
 * script that comments out the rest of its line.
 */
export function misnamedSystemReferences(text: string, variableNames: ReadonlySet<string>): MisnamedSystemReference[] {
  const found = new Map<string, MisnamedSystemReference>();
  for (const [, reference] of text.matchAll(REFERENCE)) {
    if (reference === undefined) continue; // `##{`: an escape
    const written = reference.trim();
    const lower = written.toLowerCase();
    const system = SYSTEM_KEYS.get(lower) ?? OCTOPUS_NAMES.get(lower);
    if (system !== undefined && !variableNames.has(lower) && !found.has(lower)) found.set(lower, { written, system });
  }
  return [...found.values()];
}

/** Shorthand: resolve for a target, then substitute into one text. */
export function substituteVariables(text: string, variables: ResolvedVariables, system: SystemValues = {}): string {
  return new VariableSubstitution(variables, system).substitute(text);
}

export const MASK = '********';

/**
 * Replaces every occurrence of every sensitive value with `********`, in one pass so that a mask
 * is never itself re-masked. Longest values first: when one secret contains another, the whole
 * longer secret is hidden. Empty strings are ignored (they would match everywhere). Each line of a
 * multi-line secret (8+ characters) is masked too, because logs arrive line by line.
 */
export function maskSecrets(text: string, sensitiveValues: Iterable<string>): string {
  const secrets = new Set<string>();
  for (const value of sensitiveValues) {
    if (value === '') continue;
    secrets.add(value);
    if (/[\r\n]/.test(value)) {
      for (const line of value.split(/\r?\n|\r/)) if (line.trim().length >= 8) secrets.add(line);
    }
  }
  if (secrets.size === 0 || text === '') return text;
  const ordered = [...secrets].sort((a, b) => b.length - a.length);
  const pattern = new RegExp(ordered.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  return text.replace(pattern, MASK);
}
