/** Add a machine: name and environments; the answer's one-time token becomes the one-line install (and the manual command). */
import { useState, type FormEvent } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api, messageOf, unwrap } from '../api/client.ts';

export function AddMachineForm({
  workspaceId,
  environments,
  agentServer,
  onDone,
}: {
  workspaceId: string;
  environments: Array<{ environmentId: string; name: string }>;
  agentServer: string;
  onDone: () => void;
}) {
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const add = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/api/machine', { body: { workspaceId, name: name.trim(), environmentIds: chosen } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['machines-page', workspaceId] }),
  });
  if (add.data) {
    // The agent pins the gateway's CA by its fingerprint (null: the gateway serves plaintext).
    const trust = add.data.caFingerprint
      ? `GANTRY_AGENT_CA_FINGERPRINT=${add.data.caFingerprint}`
      : 'GANTRY_AGENT_INSECURE=1';
    const command = `GANTRY_SERVER=${agentServer} GANTRY_AGENT_TOKEN=${add.data.registrationToken} ${trust} node gantry-agent.mjs`;
    return (
      <div className="panel" role="region" aria-label="Registration command">
        <h2>Start the agent on {name}</h2>
        <p>On the machine (Linux with Node.js 20 or later), within 24 hours, install the agent as a systemd service:</p>
        <pre className="command">{add.data.installCommand}</pre>
        <p>
          Or copy <code>dist/agent/</code> (built by <code>npm run build:agent</code>) to the machine and run:
        </p>
        <pre className="command">{command}</pre>
        <p className="small muted">The token is shown only now; it registers one agent.</p>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    );
  }
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  return (
    <form className="panel" onSubmit={submit} aria-label="Add machine">
      <h2>Add machine</h2>
      <label>
        Machine name
        <input value={name} onChange={(e) => setName(e.target.value)} required />
      </label>
      <fieldset>
        <legend>Environments</legend>
        {environments.map((e) => (
          <label key={e.environmentId} className="inline">
            <input
              type="checkbox"
              checked={chosen.includes(e.environmentId)}
              onChange={(event) =>
                setChosen(
                  event.target.checked ? [...chosen, e.environmentId] : chosen.filter((id) => id !== e.environmentId),
                )
              }
            />
            {e.name}
          </label>
        ))}
      </fieldset>
      <div className="actions">
        <button type="submit" disabled={add.isPending}>
          Create machine
        </button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      {add.error && (
        <p className="error" role="alert">
          {messageOf(add.error)}
        </p>
      )}
    </form>
  );
}
