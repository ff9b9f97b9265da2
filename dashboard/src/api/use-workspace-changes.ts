/**
 * Keeps a workspace's pages live without polling them: GET /api/dashboard/changes sends the
 * workspace's deployment change tick whenever it moves (the current one first), and each move
 * invalidates the cached overview and project pages, which re-read their one aggregate.
 */
import { useEffect } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { parseJson } from '../../../client/index.ts';

export function useWorkspaceChanges(workspaceId: string | null): void {
  const queryClient = useQueryClient();
  useEffect(() => {
    if (!workspaceId) return undefined;
    // Compared as text (ticks exceed 2^53); after a reconnect the first tick tells whether anything moved.
    let lastTick: string | null = null;
    const source = new EventSource(`/api/dashboard/changes?workspaceId=${encodeURIComponent(workspaceId)}`);
    source.addEventListener('changed', (event: MessageEvent<string>) => {
      const { lastChangeTick } = parseJson<{ lastChangeTick: string }>(event.data);
      if (lastTick !== null && lastChangeTick !== lastTick) {
        void queryClient.invalidateQueries({ queryKey: ['overview', workspaceId] });
        void queryClient.invalidateQueries({ queryKey: ['project-page'] });
      }
      lastTick = lastChangeTick;
    });
    return () => source.close();
  }, [workspaceId, queryClient]);
}
