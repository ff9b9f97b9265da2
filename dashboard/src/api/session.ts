/** The signed-in account (GET /api/session), sign-in and sign-out. */
import { useQuery } from '@tanstack/react-query';
import { api, setCsrfToken, unwrap, type Answer } from './client.ts';
import { queryClient } from './query-client.ts';

export type Session = Answer<'/api/session'>;

export function useSession() {
  return useQuery({
    queryKey: ['session'],
    queryFn: async () => {
      const session = unwrap(await api.GET('/api/session'));
      setCsrfToken(session.csrfToken);
      return session;
    },
    staleTime: 60_000,
    retry: false,
  });
}

export async function signIn(serviceAccountId: string, apiKey: string): Promise<Session> {
  const session = unwrap(await api.POST('/api/session', { body: { serviceAccountId, apiKey } }));
  setCsrfToken(session.csrfToken);
  queryClient.clear();
  queryClient.setQueryData(['session'], session);
  return session;
}

export async function signOut(): Promise<void> {
  unwrap(await api.DELETE('/api/session'));
  setCsrfToken(null);
  queryClient.clear();
}
