/** The one cache of server state. A request answered "signed out" sends the user to sign in. */
import { MutationCache, QueryCache, QueryClient } from '@tanstack/react-query';
import { navigate } from '../router.tsx';
import { GantryApiError, isSignedOut } from './client.ts';

function onError(error: unknown): void {
  if (!isSignedOut(error) || window.location.pathname === '/sign-in') return;
  queryClient.clear();
  const next = window.location.pathname + window.location.search + window.location.hash;
  navigate(`/sign-in?next=${encodeURIComponent(next)}`, { replace: true });
}

export const queryClient: QueryClient = new QueryClient({
  queryCache: new QueryCache({ onError }),
  mutationCache: new MutationCache({ onError }),
  defaultOptions: {
    // A refusal (4xx) is an answer, not a failure: only network errors and 5xx are tried again.
    queries: {
      retry: (count, error) => !(error instanceof GantryApiError && error.status < 500) && count < 2,
      staleTime: 1_000,
      // A page view is one read: opening a page shows what is true now, whatever the cache holds.
      refetchOnMount: 'always',
    },
  },
});
