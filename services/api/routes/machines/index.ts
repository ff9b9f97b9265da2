/** /api/machine and its environment endpoints (contract §3). */
import { Type } from '@sinclair/typebox';
import { Capability, ErrorCode } from '../../../core/index.ts';
import {
  addMachineEnvironment,
  createMachine,
  deleteMachine,
  getMachine,
  getMachineEnvironments,
  listMachines,
  removeMachineEnvironment,
  renewRegistrationToken,
  setMachineEnvironments,
  updateMachine,
  createEnrollmentKey,
  listEnrollmentKeys,
  revokeEnrollmentKey,
  machinesToUpgrade,
  requestAgentUpgrade,
  type MachineView,
} from '../../../domain/index.ts';
import type { EnrollmentKey, MachineEnvironment } from '../../../store/index.ts';
import { errorResponses } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import { agentInstallCommand } from '../agent-install/install-command.ts';
import {
  CreatedMachine,
  CreateMachineBody,
  ListMachinesQuery,
  MachineEnvironmentBody,
  MachineEnvironmentsResponse,
  MachineIdBody,
  MachineIdQuery,
  MachineList,
  MachineSchema,
  RegistrationTokenResponse,
  SetMachineEnvironmentsBody,
  UpdateMachineBody,
  CreateEnrollmentKeyBody,
  CreatedEnrollmentKey,
  EnrollmentKeyIdBody,
  EnrollmentKeyList,
  WorkspaceIdQuery,
  UpgradeMachinesBody,
  UpgradeMachinesResponse,
} from './schemas.ts';
import { sendError } from '../../plugins/errors.ts';

const tags = ['machines'];

const toEnvironmentDto = (e: MachineEnvironment) => ({ environmentId: e.id, name: e.name });

function toMachineDto(m: MachineView) {
  return {
    machineId: m.id,
    workspaceId: m.workspaceId,
    name: m.name,
    environments: m.environments.map(toEnvironmentDto),
    tagIds: m.tagIds,
    enabled: m.enabled,
    status: m.status,
    lastSeenUtc: m.lastSeenUtc?.toISOString() ?? null,
    agentVersion: m.agentVersion,
    os: m.os,
    hostname: m.hostname,
    health: m.health,
    healthReasons: m.healthReasons,
    interpreters: m.interpreters,
    freeDiskBytes: m.homeFreeBytes,
    upgrade: m.upgrade && { ...m.upgrade, updatedUtc: m.upgrade.updatedUtc.toISOString() },
  };
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

function toEnrollmentKeyDto(k: EnrollmentKey) {
  return {
    enrollmentKeyId: k.id,
    workspaceId: k.workspaceId,
    name: k.name,
    environmentIds: k.environmentIds,
    tagIds: k.tagIds,
    createdUtc: k.createdUtc.toISOString(),
    expiresUtc: iso(k.expiresUtc),
    revokedUtc: iso(k.revokedUtc),
    lastUsedUtc: iso(k.lastUsedUtc),
    useCount: k.useCount,
  };
}

export const machineRoutes: Routes = async (app) => {
  const view = { capability: Capability.View };
  const manage = { capability: Capability.ManageWorkspace };

  app.get(
    '/api/machine',
    {
      schema: {
        tags,
        summary: 'Lists machines of a workspace with assigned environments',
        querystring: ListMachinesQuery,
        response: { 200: MachineList, ...errorResponses },
      },
      config: view,
    },
    async (request) => {
      const page = await listMachines(request.deps, request.principal, request.query);
      return { machines: page.items.map(toMachineDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/machine/details',
    {
      schema: {
        tags,
        summary: 'Reads one machine',
        querystring: MachineIdQuery,
        response: { 200: MachineSchema, ...errorResponses },
      },
      config: view,
    },
    async (request) => toMachineDto(await getMachine(request.deps, request.principal, request.query.machineId)),
  );

  app.post(
    '/api/machine',
    {
      schema: {
        tags,
        summary: 'Creates a machine and returns its one-time registration token (valid 24 h, never shown again)',
        body: CreateMachineBody,
        response: { 200: CreatedMachine, ...errorResponses },
      },
      config: manage,
    },
    async (request) => {
      const created = await createMachine(request.deps, request.principal, request.body);
      const caFingerprint = request.deps.agentCaFingerprint ?? null;
      return {
        ...created,
        caFingerprint,
        installCommand: agentInstallCommand({
          publicUrl: request.deps.publicUrl ?? `${request.protocol}://${request.host}`,
          agentServer: request.deps.agentServer ?? `${request.hostname}:8081`,
          token: created.registrationToken,
          caFingerprint,
        }),
      };
    },
  );

  app.put(
    '/api/machine',
    {
      schema: {
        tags,
        summary: 'Renames, retags, enables or disables a machine',
        body: UpdateMachineBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await updateMachine(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/machine',
    {
      schema: {
        tags,
        summary: 'Deletes a machine; its agent can no longer connect',
        body: MachineIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await deleteMachine(request.deps, request.principal, request.body.machineId);
      return reply.send();
    },
  );

  app.post(
    '/api/machine/registration-token',
    {
      schema: {
        tags,
        summary: 'Issues a new one-time registration token; the current agent is replaced once it is used',
        body: MachineIdBody,
        response: { 200: RegistrationTokenResponse, ...errorResponses },
      },
      config: manage,
    },
    async (request) => ({
      ...(await renewRegistrationToken(request.deps, request.principal, request.body.machineId)),
      caFingerprint: request.deps.agentCaFingerprint ?? null,
    }),
  );

  app.get(
    '/api/machine/environments',
    {
      schema: {
        tags,
        summary: 'Returns the environments of one machine',
        querystring: MachineIdQuery,
        response: { 200: MachineEnvironmentsResponse, ...errorResponses },
      },
      config: view,
    },
    async (request) => {
      const machine = await getMachineEnvironments(request.deps, request.principal, request.query.machineId);
      return { machineId: machine.id, environments: machine.environments.map(toEnvironmentDto) };
    },
  );

  app.put(
    '/api/machine/environments',
    {
      schema: {
        tags,
        summary: 'Sets the complete environment list of a machine',
        body: SetMachineEnvironmentsBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await setMachineEnvironments(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/machine/environment',
    {
      schema: {
        tags,
        summary: 'Adds one environment to a machine',
        body: MachineEnvironmentBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await addMachineEnvironment(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.delete(
    '/api/machine/environment',
    {
      schema: {
        tags,
        summary: 'Removes one environment from a machine',
        body: MachineEnvironmentBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await removeMachineEnvironment(request.deps, request.principal, request.body);
      return reply.send();
    },
  );

  app.post(
    '/api/machine/enrollment-key',
    {
      schema: {
        tags,
        summary:
          'Gantry extension: creates a reusable enrollment key bound to environments and tags; agents started with it enroll themselves (the key is shown once)',
        body: CreateEnrollmentKeyBody,
        response: { 200: CreatedEnrollmentKey, ...errorResponses },
      },
      config: manage,
    },
    async (request) => {
      const { key, enrollmentKey } = await createEnrollmentKey(request.deps, request.principal, request.body);
      return {
        ...toEnrollmentKeyDto(key),
        enrollmentKey,
        installCommand: agentInstallCommand({
          publicUrl: request.deps.publicUrl ?? `${request.protocol}://${request.host}`,
          agentServer: request.deps.agentServer ?? `${request.hostname}:8081`,
          enrollmentKey,
          caFingerprint: request.deps.agentCaFingerprint ?? null,
        }),
      };
    },
  );

  app.get(
    '/api/machine/enrollment-key',
    {
      schema: {
        tags,
        summary: 'Gantry extension: lists the enrollment keys of a workspace (never the keys themselves)',
        querystring: WorkspaceIdQuery,
        response: { 200: EnrollmentKeyList, ...errorResponses },
      },
      config: manage,
    },
    async (request) => ({
      enrollmentKeys: (await listEnrollmentKeys(request.deps, request.principal, request.query.workspaceId)).map(
        toEnrollmentKeyDto,
      ),
    }),
  );

  app.delete(
    '/api/machine/enrollment-key',
    {
      schema: {
        tags,
        summary: 'Gantry extension: revokes an enrollment key; machines it enrolled keep working',
        body: EnrollmentKeyIdBody,
        response: errorResponses,
      },
      config: manage,
    },
    async (request, reply) => {
      await revokeEnrollmentKey(request.deps, request.principal, request.body.enrollmentKeyId);
      return reply.send();
    },
  );

  app.post(
    '/api/machine/upgrade',
    {
      schema: {
        tags,
        summary:
          "Gantry extension: asks the agents of these machines (machineIds and/or an environment's) to upgrade to the agent version this control plane ships; each finishes its running steps first, and a bundle that fails its checksum or self-test leaves the old agent running (see the machine's upgrade and health)",
        body: UpgradeMachinesBody,
        response: { 200: UpgradeMachinesResponse, 503: Type.Ref('ErrorBody'), ...errorResponses },
      },
      config: manage,
    },
    async (request, reply) => {
      const machines = await machinesToUpgrade(request.deps, request.principal, request.body);
      const distribution = request.deps.agentDistribution;
      if (!distribution)
        return sendError(reply, 503, {
          error:
            'No agent bundle on this control plane: build it with npm run build:agent (npm start does) and restart',
          errorcode: ErrorCode.UnknownError,
          requestid: request.id,
        });
      const result = await requestAgentUpgrade(request.deps, machines, distribution.version);
      return {
        version: result.version,
        machines: result.machines.map(({ machine, outcome }) => ({
          machineId: machine.id,
          name: machine.name,
          agentVersion: machine.agentVersion,
          outcome,
        })),
      };
    },
  );
};
