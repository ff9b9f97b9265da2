/** /api/release (spec §4.1, §4.12; contract §4): create, list, details with the lifecycle progression. */
import { Capability } from '../../../core/index.ts';
import type { ReleaseSnapshot } from '../../../core/index.ts';
import { createRelease, getReleaseDetails, listReleases } from '../../../domain/index.ts';
import type { Progression } from '../../../domain/index.ts';
import type { Release } from '../../../store/index.ts';
import { errorResponses, IdempotencyHeaders } from '../../schemas.ts';
import type { Routes } from '../route-types.ts';
import {
  CreateReleaseBody,
  CreatedRelease,
  ListReleasesQuery,
  ReleaseDetailsQuery,
  ReleaseDetailsSchema,
  ReleaseList,
} from './schemas.ts';

const tags = ['releases'];

export function toReleaseDto(r: Release) {
  return {
    releaseId: r.id,
    projectId: r.projectId,
    version: r.version,
    channelName: r.channelName,
    notes: r.notes,
    packageVersions: r.packageVersions,
    createdUtc: r.createdUtc.toISOString(),
  };
}

/** The snapshot as read: Sensitive ciphertext is removed here, not only by the response schema. */
function toSnapshotDto(snapshot: ReleaseSnapshot) {
  return {
    ...snapshot,
    variables: snapshot.variables.map((v) => ({
      ...v,
      values: v.values.map(({ valueEncrypted: _sealed, ...value }) => value),
    })),
  };
}

function toProgressionDto(p: Progression) {
  return {
    phases:
      p.phases?.map((phase) => ({
        phaseId: phase.phaseId,
        name: phase.name,
        sortOrder: phase.sortOrder,
        reached: phase.reached,
        complete: phase.complete,
        environments: phase.environments.map((e) => ({
          environmentId: e.environmentId,
          environmentName: e.environmentName,
          available: e.available,
          reason: e.reason,
          howToTrigger: e.howToTrigger,
        })),
      })) ?? null,
    environments: p.environments.map((e) => ({
      environmentId: e.environmentId,
      environmentName: e.environmentName,
      available: e.available,
      reason: e.reason,
    })),
  };
}

export const releaseRoutes: Routes = async (app) => {
  app.post(
    '/api/release',
    {
      schema: {
        tags,
        summary: 'Creates a release: freezes package versions, steps, variables and lifecycle',
        body: CreateReleaseBody,
        headers: IdempotencyHeaders,
        response: { 200: CreatedRelease, ...errorResponses },
      },
      config: { capability: Capability.CreateRelease },
    },
    async (request) =>
      createRelease(request.deps, request.principal, request.body, {
        idempotencyKey: request.headers['idempotency-key'],
      }),
  );

  app.get(
    '/api/release',
    {
      schema: {
        tags,
        summary: "Pages through a project's releases, newest first",
        querystring: ListReleasesQuery,
        response: { 200: ReleaseList, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const page = await listReleases(request.deps, request.principal, request.query);
      return { releases: page.items.map(toReleaseDto), totalCount: page.totalCount };
    },
  );

  app.get(
    '/api/release/details',
    {
      schema: {
        tags,
        summary:
          'Reads one release (by ID, or by project and SemVer-equivalent version) with its snapshot and lifecycle progression',
        querystring: ReleaseDetailsQuery,
        response: { 200: ReleaseDetailsSchema, ...errorResponses },
      },
      config: { capability: Capability.View },
    },
    async (request) => {
      const { release, progression } = await getReleaseDetails(request.deps, request.principal, request.query);
      return {
        ...toReleaseDto(release),
        channelId: release.channelId,
        snapshot: toSnapshotDto(release.snapshot),
        progression: toProgressionDto(progression),
      };
    },
  );
};
