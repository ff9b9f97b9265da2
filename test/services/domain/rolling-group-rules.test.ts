import { describe, expect, it } from 'vitest';
import {
  DEFAULT_GROUP_SETTINGS,
  DEFAULT_MAX_PARALLEL_MACHINES,
  membersOf,
  orderOf,
  splitGroups,
  validateForbiddenFields,
  validateLayout,
  validateMove,
  validateNewMembers,
  validateReorder,
  validateSettings,
  type GroupSettings,
  type StepSlot,
} from '../../../services/domain/rolling-group-rules.ts';

const context = { maxParallelMachines: 4, workspaceTagIds: new Set(['web', 'db', 'cache']) };
const valid: GroupSettings = { name: 'Web tier', ...DEFAULT_GROUP_SETTINGS };
const settings = (patch: Partial<GroupSettings>): GroupSettings => ({ ...valid, ...patch });
const properties = (errors: Array<{ property: string }>) => errors.map((e) => e.property);

/** A layout from a compact picture: 'a:G b:G c' = steps a and b in group G, step c in none. */
function layout(picture: string): StepSlot[] {
  return picture.split(' ').map((token) => {
    const [stepId = '', group] = token.split(':');
    return { stepId, rollingGroupId: group ?? null };
  });
}

describe('defaults', () => {
  it('match spec §2.5: window 1, MachineName, no tags, no waiting, StopStep, SkipRestOnThisMachine, Skip', () => {
    expect(DEFAULT_GROUP_SETTINGS).toEqual({
      windowSize: 1,
      machineOrder: 'MachineName',
      machineOrderTagIds: [],
      waitBetweenMachineGroups: false,
      onMachineFailure: 'StopStep',
      onMemberFailure: 'SkipRestOnThisMachine',
      onNoTargets: 'Skip',
    });
    expect(DEFAULT_MAX_PARALLEL_MACHINES).toBe(8);
    expect(validateSettings(valid, context)).toEqual([]);
  });
});

describe('validateSettings: windowSize', () => {
  it('accepts 1 and exactly maxParallelMachines', () => {
    expect(validateSettings(settings({ windowSize: 1 }), context)).toEqual([]);
    expect(validateSettings(settings({ windowSize: 4 }), context)).toEqual([]);
  });

  it('refuses 0, negatives and fractions', () => {
    for (const windowSize of [0, -1, 1.5, Number.NaN]) {
      expect(properties(validateSettings(settings({ windowSize }), context)), String(windowSize)).toEqual([
        'windowSize',
      ]);
    }
  });

  it('refuses a window above the organization maxParallelMachines, naming the limit', () => {
    const errors = validateSettings(settings({ windowSize: 5 }), context);
    expect(errors).toEqual([
      { property: 'windowSize', messages: [expect.stringContaining('maxParallelMachines (4)')] },
    ]);
    expect(validateSettings(settings({ windowSize: 5 }), { ...context, maxParallelMachines: 8 })).toEqual([]);
  });
});

describe('validateSettings: machine order', () => {
  it('accepts MachineName with no tags and TagPriority with workspace tags, first highest', () => {
    expect(validateSettings(settings({ machineOrder: 'MachineName', machineOrderTagIds: [] }), context)).toEqual([]);
    expect(
      validateSettings(settings({ machineOrder: 'TagPriority', machineOrderTagIds: ['db', 'web'] }), context),
    ).toEqual([]);
  });

  it('refuses an unknown machineOrder', () => {
    expect(properties(validateSettings(settings({ machineOrder: 'Random' }), context))).toEqual(['machineOrder']);
    expect(properties(validateSettings(settings({ machineOrder: 'machinename' }), context))).toEqual(['machineOrder']);
  });

  it('refuses tags when machineOrder is MachineName', () => {
    const errors = validateSettings(settings({ machineOrder: 'MachineName', machineOrderTagIds: ['web'] }), context);
    expect(errors).toEqual([
      { property: 'machineOrderTagIds', messages: ['must be empty when machineOrder is MachineName'] },
    ]);
  });

  it('requires at least one tag when machineOrder is TagPriority', () => {
    const errors = validateSettings(settings({ machineOrder: 'TagPriority', machineOrderTagIds: [] }), context);
    expect(errors).toEqual([
      { property: 'machineOrderTagIds', messages: ['must name at least one tag when machineOrder is TagPriority'] },
    ]);
  });

  it('refuses repeated tags and tags outside the workspace', () => {
    expect(
      properties(
        validateSettings(settings({ machineOrder: 'TagPriority', machineOrderTagIds: ['web', 'web'] }), context),
      ),
    ).toEqual(['machineOrderTagIds']);
    const unknown = validateSettings(
      settings({ machineOrder: 'TagPriority', machineOrderTagIds: ['web', 'elsewhere'] }),
      context,
    );
    expect(unknown).toEqual([{ property: 'machineOrderTagIds', messages: ['unknown tag IDs: elsewhere'] }]);
  });
});

describe('validateSettings: waitBetweenMachineGroups', () => {
  it('is allowed true only with TagPriority', () => {
    expect(
      validateSettings(
        settings({ machineOrder: 'TagPriority', machineOrderTagIds: ['web'], waitBetweenMachineGroups: true }),
        context,
      ),
    ).toEqual([]);
    expect(
      validateSettings(
        settings({ machineOrder: 'TagPriority', machineOrderTagIds: ['web'], waitBetweenMachineGroups: false }),
        context,
      ),
    ).toEqual([]);
    expect(
      properties(validateSettings(settings({ machineOrder: 'MachineName', waitBetweenMachineGroups: true }), context)),
    ).toEqual(['waitBetweenMachineGroups']);
  });
});

describe('validateSettings: failure and no-target enums', () => {
  it.each([
    ['onMachineFailure', ['StopStep', 'ContinueToOtherMachines']],
    ['onMemberFailure', ['SkipRestOnThisMachine', 'ContinueMembers']],
    ['onNoTargets', ['Skip', 'Warn', 'Fail']],
  ] as const)('accepts exactly the values of %s', (property, values) => {
    for (const value of values) expect(validateSettings(settings({ [property]: value }), context), value).toEqual([]);
    for (const value of ['', 'stopstep', 'Continue', 'Ignore']) {
      const errors = validateSettings(settings({ [property]: value }), context);
      expect(errors).toEqual([{ property, messages: [`must be one of ${values.join(', ')}`] }]);
    }
  });
});

describe('validateSettings: reporting', () => {
  it('refuses a blank name', () => {
    expect(properties(validateSettings(settings({ name: '  ' }), context))).toEqual(['name']);
  });

  it('reports every violation at once, under the given prefix', () => {
    const errors = validateSettings(
      settings({
        windowSize: 9,
        machineOrder: 'MachineName',
        machineOrderTagIds: ['web'],
        waitBetweenMachineGroups: true,
        onNoTargets: 'Never',
      }),
      context,
      'rollingGroups[2].',
    );
    expect(properties(errors)).toEqual([
      'rollingGroups[2].windowSize',
      'rollingGroups[2].machineOrderTagIds',
      'rollingGroups[2].waitBetweenMachineGroups',
      'rollingGroups[2].onNoTargets',
    ]);
  });
});

describe('validateForbiddenFields', () => {
  it('never accepts order, on create or update, whatever its value', () => {
    for (const order of [1, 0, null, 'x']) {
      expect(properties(validateForbiddenFields({ order }, 'create'))).toEqual(['order']);
      expect(properties(validateForbiddenFields({ order }, 'update'))).toEqual(['order']);
    }
    expect(validateForbiddenFields({}, 'create')).toEqual([]);
  });

  it('accepts memberStepIds on create only', () => {
    expect(validateForbiddenFields({ memberStepIds: ['a'] }, 'create')).toEqual([]);
    expect(properties(validateForbiddenFields({ memberStepIds: ['a'] }, 'update'))).toEqual(['memberStepIds']);
    expect(properties(validateForbiddenFields({ memberStepIds: ['a'], order: 2 }, 'update'))).toEqual([
      'order',
      'memberStepIds',
    ]);
  });
});

describe('membership projection', () => {
  it('lists members in step order and derives order from the first member position', () => {
    const steps = layout('a b:G c:G d e:H');
    expect(membersOf(steps)).toEqual(
      new Map([
        ['G', ['b', 'c']],
        ['H', ['e']],
      ]),
    );
    expect(orderOf(steps, 'G')).toBe(2);
    expect(orderOf(steps, 'H')).toBe(5);
    expect(orderOf(steps, 'none')).toBeNull();
  });

  it('finds groups whose members are not consecutive', () => {
    expect(splitGroups(layout('a:G b:G c:H d:H'))).toEqual([]);
    expect(splitGroups(layout('a:G b c:G'))).toEqual(['G']);
    expect(splitGroups(layout('a:G b:H c:G d:H'))).toEqual(['G', 'H']);
    expect(splitGroups([])).toEqual([]);
  });

  it('validateLayout reports split groups and groups left empty', () => {
    expect(validateLayout(layout('a:G b:G'), 'p', ['G'])).toEqual([]);
    expect(properties(validateLayout(layout('a:G b c:G'), 'p'))).toEqual(['p']);
    expect(validateLayout(layout('a b'), 'p', ['G'])[0]?.messages[0]).toContain('without member steps');
  });
});

describe('validateNewMembers', () => {
  const steps = layout('a b c d:G e');

  it('accepts one step, and a consecutive run given in any order', () => {
    expect(validateNewMembers(steps, ['a'])).toEqual([]);
    expect(validateNewMembers(steps, ['a', 'b', 'c'])).toEqual([]);
    expect(validateNewMembers(steps, ['c', 'a', 'b'])).toEqual([]);
    expect(validateNewMembers(steps, ['e'])).toEqual([]);
  });

  it('requires at least one member', () => {
    expect(validateNewMembers(steps, [])).toEqual([
      { property: 'memberStepIds', messages: ['must name at least one step'] },
    ]);
  });

  it('refuses repeats, steps of other projects and steps already in a group', () => {
    expect(validateNewMembers(steps, ['a', 'a'])[0]?.messages).toEqual(['must not repeat a step']);
    expect(validateNewMembers(steps, ['a', 'z'])[0]?.messages).toEqual(['not steps of the project: z']);
    expect(validateNewMembers(steps, ['c', 'd'])[0]?.messages).toEqual(['already in another rolling group: d']);
  });

  it('refuses steps that are not consecutive', () => {
    expect(validateNewMembers(steps, ['a', 'c'])[0]?.messages).toEqual(['must be consecutive steps of the project']);
    // c and e are free, but d (in another group) lies between them.
    expect(validateNewMembers(steps, ['c', 'e'])[0]?.messages).toEqual(['must be consecutive steps of the project']);
  });
});

describe('validateReorder', () => {
  const steps = layout('a b:G c:G d');

  it('accepts a permutation that keeps each group consecutive, even moving the whole group', () => {
    expect(validateReorder(steps, ['a', 'b', 'c', 'd'])).toEqual([]);
    expect(validateReorder(steps, ['b', 'c', 'a', 'd'])).toEqual([]);
    expect(validateReorder(steps, ['d', 'c', 'b', 'a'])).toEqual([]);
  });

  it('refuses an order that splits a group', () => {
    const errors = validateReorder(steps, ['b', 'a', 'c', 'd']);
    expect(errors).toEqual([
      { property: 'projectStepIds', messages: [expect.stringContaining('split rolling group G')] },
    ]);
  });

  it("refuses anything but exactly the project's steps", () => {
    expect(validateReorder(steps, ['a', 'b', 'c'])[0]?.messages[0]).toContain('missing: d');
    expect(validateReorder(steps, ['a', 'b', 'c', 'd', 'x'])[0]?.messages[0]).toContain('not steps of the project: x');
    expect(validateReorder(steps, ['a', 'b', 'c', 'c'])[0]?.messages[0]).toBe('must not repeat a step');
    expect(validateReorder(steps, [])[0]?.messages[0]).toContain('missing');
    expect(validateReorder([], [])).toEqual([]);
  });
});

describe('validateMove', () => {
  const steps = layout('a b:G c:G d:G e f:H');
  const groups = ['G', 'H'];

  it('lets a step join a group at either end of its run', () => {
    expect(validateMove(steps, 'a', 'G', groups)).toEqual([]);
    expect(validateMove(steps, 'e', 'G', groups)).toEqual([]);
    expect(validateMove(steps, 'e', 'H', groups)).toEqual([]);
  });

  it('lets a step leave its group at either end of its run', () => {
    expect(validateMove(steps, 'b', null, groups)).toEqual([]);
    expect(validateMove(steps, 'd', null, groups)).toEqual([]);
  });

  it('refuses leaving from the middle, which would split the group', () => {
    expect(properties(validateMove(steps, 'c', null, groups))).toEqual(['projectStepId']);
  });

  it('refuses joining a group away from its run', () => {
    expect(validateMove(layout('a:G b c'), 'c', 'G', ['G'])[0]?.messages[0]).toContain('either end');
  });

  it('refuses leaving a group with one member, which would leave it empty', () => {
    expect(validateMove(steps, 'f', null, groups)[0]?.messages[0]).toContain('never becomes empty');
  });

  it('moves an end member straight into an adjacent group when neither splits nor empties', () => {
    const adjacent = layout('a:G b:G c:H d:H');
    expect(validateMove(adjacent, 'b', 'H', ['G', 'H'])).toEqual([]);
    expect(validateMove(adjacent, 'a', 'H', ['G', 'H'])).not.toEqual([]);
  });

  it('accepts a move to where the step already is, changing nothing', () => {
    expect(validateMove(steps, 'c', 'G', groups)).toEqual([]);
    expect(validateMove(steps, 'a', null, groups)).toEqual([]);
  });

  it('refuses unknown steps and groups of other projects', () => {
    expect(properties(validateMove(steps, 'z', 'G', groups))).toEqual(['projectStepId']);
    expect(properties(validateMove(steps, 'a', 'X', groups))).toEqual(['rollingGroupId']);
  });
});
