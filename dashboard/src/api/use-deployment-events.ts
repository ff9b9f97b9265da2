/**
 * Follows a deployment live over Server-Sent Events (GET /api/deployment/events): no polling. The
 * log lines and the status go into the query cache (['deployment-log', id]); a status change
 * invalidates the deployment page's read so its step tree and timeline follow. EventSource
 * resumes by itself with Last-Event-ID after a dropped connection; `end` closes it.
 */
import { useEffect } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { parseJson, type components } from '../../../client/index.ts';
import type { Answer } from './client.ts';

type LogItem = Answer<'/api/deployment'>['logs'][number];
/**
 * What the page keeps of a line: the fields it shows. The page keeps every line of the log, and a
 * whole log item (IDs of its deployment, step, parent and task) costs several times as much.
 */
export type LogLine = Pick<LogItem, 'CreatedUtcTick' | 'CreatedUtc' | 'LogLevel' | 'Data'>;
const kept = (item: LogItem): LogLine => ({
  CreatedUtcTick: item.CreatedUtcTick,
  CreatedUtc: item.CreatedUtc,
  LogLevel: item.LogLevel,
  Data: item.Data,
});
export type DeploymentStatus = Answer<'/api/deployment'>['status'];

export interface DeploymentLog {
  lines: LogLine[];
  /** How many lines say a gate moved (issue #15: "Waiting: …", an approval): counted as they arrive. */
  gateLines: number;
  status: DeploymentStatus | null;
  ended: boolean;
  connected: boolean;
}

const EMPTY: DeploymentLog = { lines: [], gateLines: 0, status: null, ended: false, connected: false };
const isGateLine = (line: LogLine) => /^(Waiting: |Approved by )/.test(line.Data);
const logKey = (deploymentId: string) => ['deployment-log', deploymentId] as const;

export function useDeploymentEvents(deploymentId: string): DeploymentLog {
  const queryClient = useQueryClient();
  const { data } = useQuery({
    queryKey: logKey(deploymentId),
    queryFn: () => EMPTY,
    // Only the stream writes this entry: a refetch would wipe the lines it delivered.
    staleTime: Infinity,
    // Each batch of lines makes a new entry: comparing it deeply with the last one (the default)
    // walks every line so far, on every batch — quadratic in a long log.
    structuralSharing: false,
    refetchOnMount: false,
    gcTime: 0,
  });
  useEffect(() => {
    const update = (change: (log: DeploymentLog) => DeploymentLog) =>
      queryClient.setQueryData<DeploymentLog>(logKey(deploymentId), (log) => change(log ?? EMPTY));
    // A new stream starts from the first line: drop what an earlier one of this page left.
    queryClient.setQueryData(logKey(deploymentId), EMPTY);
    const source = new EventSource(`/api/deployment/events?deploymentId=${encodeURIComponent(deploymentId)}`);
    const onStatus = (event: MessageEvent<string>) => {
      const status = parseJson<DeploymentStatus>(event.data);
      update((log) => ({ ...log, status }));
      void queryClient.invalidateQueries({ queryKey: ['deployment-page', deploymentId] });
    };
    source.addEventListener('open', () => update((log) => ({ ...log, connected: true })));
    source.addEventListener('status', onStatus);
    source.addEventListener('logs', (event: MessageEvent<string>) => {
      const lines = parseJson<LogItem[]>(event.data).map(kept);
      const gates = lines.filter(isGateLine).length;
      update((log) => ({ ...log, lines: log.lines.concat(lines), gateLines: log.gateLines + gates }));
    });
    source.addEventListener('end', (event: MessageEvent<string>) => {
      source.close();
      onStatus(event);
      update((log) => ({ ...log, ended: true, connected: false }));
    });
    source.addEventListener('error', () => {
      if (source.readyState === EventSource.CLOSED) update((log) => ({ ...log, connected: false }));
    });
    return () => source.close();
  }, [deploymentId, queryClient]);
  return data ?? EMPTY;
}

export type ErrorBody = components['schemas']['ErrorBody'];
