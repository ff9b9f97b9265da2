/** Sign-in: a service account's ID and API key, traded for a session cookie (the key is not kept). */
import { useState, type FormEvent } from 'react';
import { messageOf } from '../api/client.ts';
import { signIn } from '../api/session.ts';
import { navigate } from '../router.tsx';

export function SignInPage({ next }: { next: string | null }) {
  const [accountId, setAccountId] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    signIn(accountId.trim(), apiKey)
      .then(() => navigate(next?.startsWith('/') && !next.startsWith('//') ? next : '/', { replace: true }))
      .catch((failure: unknown) => {
        setError(messageOf(failure));
        setBusy(false);
      });
  };
  return (
    <main className="sign-in">
      <h1>Sign in to Gantry</h1>
      <form onSubmit={submit}>
        <label>
          Service account ID
          <input autoComplete="username" value={accountId} onChange={(e) => setAccountId(e.target.value)} required />
        </label>
        <label>
          API key
          <input
            type="password"
            autoComplete="current-password"
            value={apiKey}
            onChange={(e) => setApiKey(e.target.value)}
            required
          />
        </label>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </form>
      <p className="muted small">
        The key is exchanged for a session cookie the page cannot read; it is not stored in the browser.
      </p>
    </main>
  );
}
