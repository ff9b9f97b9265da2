/** Machines: status, last contact, agent version, environments and tags; paged and filtered on the server. */
import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { Pager, pageParams } from '../components/pager.tsx';
import { SearchBox } from '../components/search-box.tsx';
import { Failure, Loading, Refusal } from '../components/states.tsx';
import { StatusBadge } from '../components/status-badge.tsx';
import { TimeAgo } from '../components/time-ago.tsx';
import { setSearchParams, useLocation } from '../router.tsx';
import { AddMachineForm } from './add-machine-form.tsx';

const TAKE = 50;
const STATUSES = ['Online', 'Offline', 'Pending'] as const;

export function MachinesPage({ workspaceId }: { workspaceId: string }) {
  const location = useLocation();
  const { skip, search } = pageParams(location);
  const statusParam = location.searchParams.get('status');
  const status = STATUSES.find((s) => s === statusParam);
  const [adding, setAdding] = useState(false);
  const page = useQuery({
    queryKey: ['machines-page', workspaceId, search, status, skip],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/dashboard/machines', {
          params: { query: { workspaceId, search: search || undefined, status, skip, take: TAKE } },
        }),
      ),
    placeholderData: keepPreviousData,
    refetchInterval: 10_000,
  });
  if (page.error) return <Failure error={page.error} />;
  if (!page.data) return <Loading what="machines" />;
  const { machines, totalCount, environments, addMachine, agentServer } = page.data;
  return (
    <section>
      <div className="page-head">
        <h1>Machines</h1>
        <SearchBox label="Filter machines" value={search} />
        <label>
          Status
          <select value={status ?? ''} onChange={(e) => setSearchParams({ status: e.target.value, skip: undefined })}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {addMachine.allowed ? (
          !adding && (
            <button type="button" onClick={() => setAdding(true)}>
              Add machine
            </button>
          )
        ) : (
          <Refusal reason={`Add machine: ${addMachine.reason}`} />
        )}
      </div>
      {adding && (
        <AddMachineForm
          workspaceId={workspaceId}
          environments={environments}
          agentServer={agentServer}
          onDone={() => setAdding(false)}
        />
      )}
      <table aria-label="Machines">
        <thead>
          <tr>
            <th scope="col">Machine</th>
            <th scope="col">Status</th>
            <th scope="col">Last seen</th>
            <th scope="col">Agent</th>
            <th scope="col">Environments</th>
            <th scope="col">Tags</th>
          </tr>
        </thead>
        <tbody>
          {machines.map((m) => (
            <tr key={m.machineId}>
              <th scope="row">
                {m.name}
                {!m.enabled && <span className="small muted"> (disabled)</span>}
              </th>
              <td>
                <StatusBadge status={m.status} />
              </td>
              <td>
                <TimeAgo iso={m.lastSeenUtc} />
              </td>
              <td className="small">
                {m.agentVersion ?? '—'}
                {m.os ? ` · ${m.os}` : ''}
                {m.hostname ? ` · ${m.hostname}` : ''}
              </td>
              <td>{m.environments.map((e) => e.name).join(', ') || '—'}</td>
              <td>
                {m.tags.map((t) => (
                  <span key={t.tagId} className="tag">
                    {t.name}
                  </span>
                ))}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {machines.length === 0 && <p className="muted">No machine{search || status ? ' matches the filter' : ' yet'}.</p>}
      <Pager skip={skip} take={TAKE} totalCount={totalCount} />
    </section>
  );
}
