import { Type } from '@sinclair/typebox';
import { Id, Int32, Name, Nullable } from '../../schemas.ts';

/**
 * Enum values are plain bounded strings here on purpose: rolling-group-rules.ts checks them, so
 * every rule violation of spec §2.5 is reported the same way (validationErrors per property).
 */
const EnumText = Type.String({ maxLength: 100 });

const Settings = {
  windowSize: Type.Optional(Int32()),
  machineOrder: Type.Optional(EnumText),
  machineOrderTagIds: Type.Optional(Type.Array(Id, { maxItems: 100 })),
  waitBetweenMachineGroups: Type.Optional(Type.Boolean()),
  onMachineFailure: Type.Optional(EnumText),
  onMemberFailure: Type.Optional(EnumText),
  onNoTargets: Type.Optional(EnumText),
};

/** Declared only so that the rules can refuse them by name (in any spelling), never stored. */
const Forbidden = Type.Optional(Type.Unknown({ description: 'Never accepted: answers 400' }));

export const RollingGroupSchema = Type.Object({
  rollingGroupId: Id,
  projectId: Id,
  name: Type.String(),
  order: Type.Integer(),
  windowSize: Type.Integer(),
  machineOrder: Type.String(),
  machineOrderTagIds: Type.Array(Type.String()),
  waitBetweenMachineGroups: Type.Boolean(),
  onMachineFailure: Type.String(),
  onMemberFailure: Type.String(),
  onNoTargets: Type.String(),
  memberStepIds: Type.Array(Type.String()),
});

export const ProjectIdQuery = Type.Object({ projectId: Id });
export const RollingGroupList = Type.Object({ projectId: Id, rollingGroups: Type.Array(RollingGroupSchema) });

export const CreateRollingGroupBody = Type.Object({
  projectId: Id,
  name: Name,
  memberStepIds: Type.Array(Id, { maxItems: 1000 }),
  ...Settings,
  order: Forbidden,
});
export const CreatedRollingGroup = Type.Object({ rollingGroupId: Id });

export const UpdateRollingGroupBody = Type.Object({
  rollingGroupId: Id,
  name: Type.Optional(Name),
  ...Settings,
  order: Forbidden,
  memberStepIds: Forbidden,
});

export const RollingGroupIdBody = Type.Object({ rollingGroupId: Id });
export const MoveStepBody = Type.Object({ projectStepId: Id, rollingGroupId: Nullable(Id) });
