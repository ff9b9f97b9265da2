import { describe, expect, it } from 'vitest';
import {
  maskSecrets,
  MAX_NESTING_DEPTH,
  resolveVariables,
  substituteVariables,
  VariableCycleError,
  VariableExpansionTooLargeError,
  VariableSubstitution,
  type CandidateValue,
  type ResolutionTarget,
  type ValueFilters,
  misnamedSystemReferences,
} from '../../../services/domain/variable-resolution.ts';

const unscoped: ValueFilters = { environmentIds: [], machineIds: [], tagFilter: [], stepIds: [], channelIds: [] };

function value(
  name: string,
  v: string,
  filters: Partial<ValueFilters> = {},
  extra: Partial<CandidateValue> = {},
): CandidateValue {
  return { name, value: v, sensitive: false, source: 'Project', filters: { ...unscoped, ...filters }, ...extra };
}

const full: ResolutionTarget = {
  environmentId: 'prod',
  machineId: 'web1',
  machineTagIds: ['linux', 'eu'],
  stepId: 'deploy',
  channelId: 'main',
};

function pick(candidates: CandidateValue[], target: ResolutionTarget = full, name = 'X'): string | undefined {
  return resolveVariables(candidates, target).get(name.toLowerCase())?.value;
}

describe('resolveVariables: matching', () => {
  it('picks an unscoped value when nothing else applies', () => {
    expect(pick([value('X', 'a')])).toBe('a');
  });

  it('skips a value whose environment filter does not contain the target environment', () => {
    expect(pick([value('X', 'a', { environmentIds: ['dev'] })])).toBeUndefined();
    expect(pick([value('X', 'a', { environmentIds: ['dev', 'prod'] })])).toBe('a');
  });

  it('requires every given filter to match', () => {
    const v = value('X', 'a', { environmentIds: ['prod'], machineIds: ['web2'] });
    expect(pick([v])).toBeUndefined();
    expect(pick([v], { ...full, machineId: 'web2' })).toBe('a');
  });

  it('does not match a scoped dimension that the target lacks', () => {
    const machineScoped = value('X', 'm', { machineIds: ['web1'] });
    expect(pick([machineScoped], { environmentId: 'prod' })).toBeUndefined();
    expect(pick([value('X', 's', { stepIds: ['deploy'] })], { environmentId: 'prod' })).toBeUndefined();
    expect(
      pick([value('X', 'c', { channelIds: ['main'] })], { environmentId: 'prod', channelId: null }),
    ).toBeUndefined();
    expect(
      pick([value('X', 't', { tagFilter: [{ tagIds: ['linux'] }] })], {
        environmentId: 'prod',
        machineTagIds: ['linux'],
      }),
    ).toBeUndefined();
  });

  it('matches a tag filter when the machine has every tag of at least one set', () => {
    const v = value('X', 't', { tagFilter: [{ tagIds: ['linux', 'us'] }, { tagIds: ['eu'] }] });
    expect(pick([v])).toBe('t');
    expect(pick([v], { ...full, machineTagIds: ['linux'] })).toBeUndefined();
    expect(pick([v], { ...full, machineTagIds: ['linux', 'us'] })).toBe('t');
  });

  it('never matches an empty tag set inside a tag filter', () => {
    expect(pick([value('X', 't', { tagFilter: [{ tagIds: [] }] })])).toBeUndefined();
  });

  it('matches names case-insensitively and keeps the stored spelling', () => {
    const resolved = resolveVariables([value('DbHost', 'a')], full);
    expect(resolved.get('dbhost')).toMatchObject({ name: 'DbHost', value: 'a' });
  });

  it('resolves each name independently', () => {
    const resolved = resolveVariables(
      [value('A', '1'), value('B', '2', { environmentIds: ['dev'] }), value('C', '3')],
      full,
    );
    expect([...resolved.keys()].sort()).toEqual(['a', 'c']);
  });
});

describe('resolveVariables: precedence', () => {
  const byDimension: Array<[string, Partial<ValueFilters>]> = [
    ['step', { stepIds: ['deploy'] }],
    ['machine', { machineIds: ['web1'] }],
    ['tag', { tagFilter: [{ tagIds: ['linux'] }] }],
    ['environment', { environmentIds: ['prod'] }],
    ['channel', { channelIds: ['main'] }],
    ['unscoped', {}],
  ];

  for (let i = 0; i < byDimension.length - 1; i++) {
    const [winner, winnerFilters] = byDimension[i]!;
    for (const [loser, loserFilters] of byDimension.slice(i + 1)) {
      it(`prefers ${winner} over ${loser} whatever the order`, () => {
        const a = value('X', winner, winnerFilters);
        const b = value('X', loser, loserFilters);
        expect(pick([a, b])).toBe(winner);
        expect(pick([b, a])).toBe(winner);
      });
    }
  }

  it('prefers a step-scoped value over one scoped to machine, tag, environment and channel at once', () => {
    const many = value('X', 'many', {
      machineIds: ['web1'],
      tagFilter: [{ tagIds: ['eu'] }],
      environmentIds: ['prod'],
      channelIds: ['main'],
    });
    expect(pick([many, value('X', 'step', { stepIds: ['deploy'] })])).toBe('step');
  });

  it('prefers environment + channel over environment alone', () => {
    const envOnly = value('X', 'env', { environmentIds: ['prod'] });
    const both = value('X', 'both', { environmentIds: ['prod'], channelIds: ['main'] });
    expect(pick([both, envOnly])).toBe('both');
    expect(pick([envOnly, both])).toBe('both');
  });

  it('prefers project over workspace at equal specificity', () => {
    const ws = value('X', 'ws', { environmentIds: ['prod'] }, { source: 'Workspace' });
    const project = value('X', 'project', { environmentIds: ['prod'] });
    expect(pick([ws, project])).toBe('project');
    expect(pick([project, ws])).toBe('project');
  });

  it('prefers a more specific workspace value over a less specific project value', () => {
    const ws = value('X', 'ws', { environmentIds: ['prod'] }, { source: 'Workspace' });
    expect(pick([value('X', 'project'), ws])).toBe('ws');
  });

  it('lets the project value win by name case-insensitively against a workspace value', () => {
    const resolved = resolveVariables(
      [value('conn', 'ws', {}, { source: 'Workspace' }), value('Conn', 'project')],
      full,
    );
    expect(resolved.get('conn')).toMatchObject({ name: 'Conn', value: 'project', source: 'Project' });
  });

  it('prefers the narrower filter at equal specificity and source', () => {
    const wide = value('X', 'wide', { environmentIds: ['prod', 'staging', 'dev'] });
    const narrow = value('X', 'narrow', { environmentIds: ['prod'] });
    expect(pick([wide, narrow])).toBe('narrow');
    expect(pick([narrow, wide])).toBe('narrow');
  });

  it('keeps the earlier candidate on a full tie', () => {
    expect(pick([value('X', 'first'), value('X', 'second')])).toBe('first');
  });

  it('reports the source, sensitivity and value id of the chosen value', () => {
    const resolved = resolveVariables(
      [value('Pwd', 's3cret', {}, { sensitive: true, source: 'Workspace', variableValueId: 'vv1' })],
      full,
    );
    expect(resolved.get('pwd')).toEqual({
      name: 'Pwd',
      value: 's3cret',
      sensitive: true,
      source: 'Workspace',
      variableValueId: 'vv1',
    });
  });
});

describe('VariableSubstitution', () => {
  const vars = (...candidates: CandidateValue[]) => resolveVariables(candidates, full);

  it('replaces #{Name} and #{VAR.Name}, case-insensitively and ignoring inner spaces', () => {
    const text = substituteVariables(
      'host=#{DbHost} again=#{VAR.dbhost} spaced=#{ DbHost }',
      vars(value('DbHost', 'db1')),
    );
    expect(text).toBe('host=db1 again=db1 spaced=db1');
  });

  it('leaves unknown references as they are', () => {
    expect(substituteVariables('a #{Missing} b #{VAR.Missing} c #{CONTEXT.Nope}', vars())).toBe(
      'a #{Missing} b #{VAR.Missing} c #{CONTEXT.Nope}',
    );
  });

  it('leaves text without references untouched, including lone # and braces', () => {
    const text = 'echo "#hash {brace} #{ } #{a\nb}" ${HOME}';
    expect(substituteVariables(text, vars(value('a', 'x')))).toBe(text);
  });

  it('turns ##{X} into a literal #{X}', () => {
    expect(substituteVariables('##{X} and #{X}', vars(value('X', 'v')))).toBe('#{X} and v');
  });

  it('resolves nested references through several levels', () => {
    const s = new VariableSubstitution(vars(value('A', '#{B}-a'), value('B', '#{C}-b'), value('C', 'c')));
    expect(s.substitute('#{A}')).toBe('c-b-a');
    expect(s.valueOf('a')).toBe('c-b-a');
  });

  it('substitutes a variable that is used many times and expands it once', () => {
    expect(substituteVariables('#{A}#{A}#{A}', vars(value('A', '#{B}'), value('B', 'x')))).toBe('xxx');
  });

  it('keeps an unknown nested reference inside an expanded value', () => {
    expect(substituteVariables('#{A}', vars(value('A', 'pre #{Nope} post')))).toBe('pre #{Nope} post');
  });

  it('throws a cycle error naming the cycle', () => {
    const s = new VariableSubstitution(vars(value('A', '#{B}'), value('B', '#{C}'), value('C', 'x#{A}')));
    let thrown: unknown;
    try {
      s.substitute('start #{A}');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(VariableCycleError);
    expect((thrown as VariableCycleError).cycle).toEqual(['A', 'B', 'C', 'A']);
    expect((thrown as Error).message).toBe('Variable reference cycle: A -> B -> C -> A');
  });

  it('throws for a variable that refers to itself', () => {
    expect(() => substituteVariables('#{Self}', vars(value('Self', 'x #{VAR.self}')))).toThrow('Self -> Self');
  });

  it('does not report a cycle for a diamond of references', () => {
    const s = new VariableSubstitution(
      vars(value('Top', '#{L}|#{R}'), value('L', '#{Base}'), value('R', '#{Base}'), value('Base', 'b')),
    );
    expect(s.substitute('#{Top}')).toBe('b|b');
  });

  it('reports cycles among unused variables only from expandAll', () => {
    const s = new VariableSubstitution(vars(value('A', '#{B}'), value('B', '#{A}'), value('Ok', 'fine')));
    expect(s.substitute('#{Ok}')).toBe('fine');
    expect(() => s.expandAll()).toThrow(VariableCycleError);
  });

  it('expands every variable with expandAll', () => {
    const s = new VariableSubstitution(vars(value('A', '#{B}!'), value('B', 'b')));
    expect(s.expandAll().map((v) => [v.name, v.value])).toEqual([
      ['A', 'b!'],
      ['B', 'b'],
    ]);
  });

  it('refuses an expansion that grows beyond the size limit', () => {
    const chain = [value('L0', 'x'.repeat(1024))];
    for (let i = 1; i <= 13; i++) chain.push(value(`L${i}`, `#{L${i - 1}}#{L${i - 1}}`));
    expect(() => substituteVariables('#{L13}', vars(...chain))).toThrow(VariableExpansionTooLargeError);
  });

  it('refuses nesting deeper than the limit instead of overflowing the stack', () => {
    const chain = [value('N0', 'end')];
    for (let i = 1; i <= MAX_NESTING_DEPTH + 5; i++) chain.push(value(`N${i}`, `#{N${i - 1}}`));
    expect(() => substituteVariables(`#{N${MAX_NESTING_DEPTH + 5}}`, vars(...chain))).toThrow('nested more than');
    expect(substituteVariables('#{N50}', vars(...chain))).toBe('end');
  });

  it('returns undefined from valueOf for a name with no applicable value', () => {
    expect(new VariableSubstitution(vars()).valueOf('Nope')).toBeUndefined();
  });

  it('lists the plain values of Sensitive variables', () => {
    const s = new VariableSubstitution(vars(value('Pwd', 'p4ss', {}, { sensitive: true }), value('User', 'me')));
    expect(s.sensitiveValues()).toEqual(['p4ss']);
  });
});

describe('system values', () => {
  const system = {
    ProjectName: 'Shop',
    ReleaseVersion: '1.2.3',
    ReleaseNotes: null,
    ChannelName: 'Default',
    EnvironmentName: 'Production',
    MachineName: 'web1',
    DeploymentId: 'd-1',
    StepName: 'Deploy',
    PackageFolder: '/work/pkg',
  };

  it('substitutes every #{CONTEXT.X} value, case-insensitively, null as empty', () => {
    const text = [
      '#{CONTEXT.ProjectName}',
      '#{context.releaseversion}',
      '[#{CONTEXT.ReleaseNotes}]',
      '#{CONTEXT.ChannelName}',
      '#{CONTEXT.EnvironmentName}',
      '#{CONTEXT.MachineName}',
      '#{CONTEXT.DeploymentId}',
      '#{CONTEXT.StepName}',
      '#{CONTEXT.PackageFolder}',
    ].join(' ');
    expect(substituteVariables(text, new Map(), system)).toBe(
      'Shop 1.2.3 [] Default Production web1 d-1 Deploy /work/pkg',
    );
  });

  it('leaves a system value the caller did not supply as it is', () => {
    expect(substituteVariables('#{CONTEXT.MachineName}', new Map(), { ProjectName: 'Shop' })).toBe(
      '#{CONTEXT.MachineName}',
    );
  });

  it('substitutes system values inside variable values', () => {
    expect(
      substituteVariables(
        '#{Url}',
        resolveVariables([value('Url', 'https://#{CONTEXT.EnvironmentName}.example')], full),
        system,
      ),
    ).toBe('https://Production.example');
  });

  it('does not expand references inside system values', () => {
    const vars = resolveVariables([value('Pwd', 'secret', {}, { sensitive: true })], full);
    expect(substituteVariables('#{CONTEXT.ReleaseNotes}', vars, { ReleaseNotes: 'see #{Pwd}' })).toBe('see #{Pwd}');
  });

  it('falls back to a variable literally named CONTEXT.X when no system value is supplied', () => {
    const vars = resolveVariables([value('CONTEXT.Custom', 'mine')], full);
    expect(substituteVariables('#{CONTEXT.Custom}', vars, system)).toBe('mine');
  });
});

describe('maskSecrets', () => {
  it('replaces every occurrence of every secret', () => {
    expect(maskSecrets('user=me pwd=hunter2 again hunter2', ['hunter2'])).toBe('user=me pwd=******** again ********');
  });

  it('masks the longest secret first when one contains another', () => {
    expect(maskSecrets('token abc123xyz and abc', ['abc', 'abc123xyz'])).toBe('token ******** and ********');
  });

  it('ignores empty strings and returns text without secrets unchanged', () => {
    expect(maskSecrets('nothing to hide', ['', 'absent'])).toBe('nothing to hide');
    expect(maskSecrets('nothing', [])).toBe('nothing');
  });

  it('treats regex metacharacters in secrets literally', () => {
    expect(maskSecrets('a.b*c (x) a-b-c', ['a.b*c', '(x)'])).toBe('******** ******** a-b-c');
  });

  it('does not re-mask a mask when a secret looks like part of it', () => {
    expect(maskSecrets('pw=secret and *', ['secret', '*'])).toBe('pw=******** and ********');
  });

  it('masks each line of a multi-line secret as well as the whole', () => {
    const cert = '-----BEGIN KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END KEY-----';
    expect(maskSecrets(`whole: ${cert}`, [cert])).toBe('whole: ********');
    expect(maskSecrets('line: MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', [cert])).toBe('line: ********');
  });

  it('does not mask short lines of a multi-line secret', () => {
    expect(maskSecrets('{ "a": 1 }\n}', ['{\n}\nlonger-line-here'])).toBe('{ "a": 1 }\n}');
  });
});

describe('misnamedSystemReferences', () => {
  it('names each system value written without CONTEXT. once, as written, unless a variable has that name', () => {
    const text = 'cd #{ PackageFolder } && #{packagefolder} #{EnvironmentName} #{StepName} #{Nope} #{VAR.MachineName}';
    expect(misnamedSystemReferences(text, new Set(['stepname']))).toEqual([
      { written: 'PackageFolder', system: 'PackageFolder' },
      { written: 'EnvironmentName', system: 'EnvironmentName' },
    ]);
  });

  it("names Octopus's system variables with the value each stands for, unless a variable has that name", () => {
    const text =
      'echo #{Octopus.Release.Number} #{octopus.environment.name} #{Octopus.Release.Number} ' +
      'cd #{Octopus.Action.Package.InstallationDirectoryPath} #{Octopus.Machine.Name} #{Octopus.Release.Id}';
    expect(misnamedSystemReferences(text, new Set(['octopus.machine.name']))).toEqual([
      { written: 'Octopus.Release.Number', system: 'ReleaseVersion' },
      { written: 'octopus.environment.name', system: 'EnvironmentName' },
      { written: 'Octopus.Action.Package.InstallationDirectoryPath', system: 'PackageFolder' },
    ]);
  });

  it('ignores escaped references and the prefixed forms', () => {
    expect(
      misnamedSystemReferences('##{PackageFolder} #{CONTEXT.PackageFolder} ##{Octopus.Release.Number}', new Set()),
    ).toEqual([]);
  });
});
