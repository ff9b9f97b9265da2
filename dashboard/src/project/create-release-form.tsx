/**
 * Create a release: channel, version, package versions from the feed (the latest preselected) and
 * notes. The server applies the channel's rules and says which one a choice breaks.
 */
import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, messageOf, unwrap } from '../api/client.ts';
import { Failure, Loading } from '../components/states.tsx';

export function CreateReleaseForm({ projectId, onDone }: { projectId: string; onDone: () => void }) {
  const queryClient = useQueryClient();
  const form = useQuery({
    queryKey: ['release-form', projectId],
    queryFn: async () => unwrap(await api.GET('/api/dashboard/release-form', { params: { query: { projectId } } })),
    staleTime: 0,
  });
  const [version, setVersion] = useState<string | null>(null);
  const [channel, setChannel] = useState<string | null>(null);
  const [notes, setNotes] = useState('');
  const [chosen, setChosen] = useState<Record<string, string>>({});
  const create = useMutation({
    mutationFn: async (body: {
      version: string;
      channelName?: string;
      notes: string;
      packageVersions: Record<string, string>;
    }) => unwrap(await api.POST('/api/release', { body: { projectId, ...body } })),
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: ['project-page', projectId] });
      onDone();
    },
  });
  if (form.error) return <Failure error={form.error} />;
  if (!form.data) return <Loading what="the release form" />;
  const data = form.data;
  const defaultChannel = data.channels.find((c) => c.isDefault)?.name ?? '';
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const packageVersions = Object.fromEntries(
      data.packages.flatMap((p) => {
        const picked = chosen[p.packageId] ?? p.versions[0];
        return picked ? [[p.packageId, picked]] : [];
      }),
    );
    const channelName = channel ?? defaultChannel;
    create.mutate({
      version: version ?? data.nextVersion,
      channelName: channelName || undefined,
      notes,
      packageVersions,
    });
  };
  return (
    <form className="panel" onSubmit={submit} aria-label="Create release">
      <h2>Create release</h2>
      <label>
        Version
        <input value={version ?? data.nextVersion} onChange={(e) => setVersion(e.target.value)} required />
      </label>
      {data.channels.length > 0 && (
        <label>
          Channel
          <select value={channel ?? defaultChannel} onChange={(e) => setChannel(e.target.value)}>
            {!data.channels.some((c) => c.isDefault) && <option value="">(none)</option>}
            {data.channels.map((c) => (
              <option key={c.channelId} value={c.name}>
                {c.name}
                {c.isDefault ? ' (default)' : ''}
              </option>
            ))}
          </select>
        </label>
      )}
      {data.packages.map((p) => (
        <label key={p.packageId}>
          Package {p.packageId}
          {p.versions.length === 0 ? (
            <span className="refusal">No version of {p.packageId} in the feed yet</span>
          ) : (
            <select
              value={chosen[p.packageId] ?? p.versions[0]}
              onChange={(e) => setChosen({ ...chosen, [p.packageId]: e.target.value })}
            >
              {p.versions.map((v, i) => (
                <option key={v} value={v}>
                  {v}
                  {i === 0 ? ' (latest)' : ''}
                </option>
              ))}
            </select>
          )}
        </label>
      ))}
      <label>
        Notes
        <textarea value={notes} onChange={(e) => setNotes(e.target.value)} rows={3} />
      </label>
      <div className="actions">
        <button type="submit" disabled={create.isPending}>
          Create release
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      {create.error && (
        <p className="error" role="alert">
          {messageOf(create.error)}
        </p>
      )}
    </form>
  );
}
