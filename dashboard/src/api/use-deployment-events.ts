/**
 * Follows a deployment live over Server-Sent Events (GET /api/deployment/events): no polling. The
 * log lines and the status go into the query cache (['deployment-log', id]); a status change
 * invalidates the deployment page's read so its step tree and timeline follow. EventSource
 * resumes by itself with Last-Event-ID after a dropped connection; `end` closes it.
 *
 * Bounded: a log may hold millions of lines, and the page keeps at most KEPT_LINES of them. It
 * opens at the log's tail (`tail=`), and while following drops the oldest lines it holds; the
 * whole log is the server's download (GET /api/deployment/log). A permalink to a line before the
 * kept ones opens a window from that line instead (`after=`), which stops at KEPT_LINES. A level
 * (`level=`) streams only the lines at it and above, from the whole log: the level filter over a
 * log longer than the part held.
 */
import { useEffect } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { parseJson, type components, type paths } from '../../../client/index.ts';
import type { Answer } from './client.ts';

/** The most lines the page holds (~440 bytes each, with their rows' text). */
export const KEPT_LINES = 100_000;
/** Following the tail, the oldest lines are dropped once this many more arrived (a copy per drop, not per batch). */
const DROP_EVERY = KEPT_LINES / 10;

type LogItem = Answer<'/api/deployment'>['logs'][number];
/** What the page keeps of a line: the fields it shows (a whole log item with its IDs costs several times as much). */
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
  /** Lines of the log before the first one held (not known for a window from a line: null). */
  earlierLines: number | null;
  /** A window from a line stopped at KEPT_LINES: later lines exist and are not followed. */
  laterLinesCut: boolean;
  /** How many lines say a gate moved (issue #15: "Waiting: …", an approval): counted as they arrive. */
  gateLines: number;
  status: DeploymentStatus | null;
  ended: boolean;
  connected: boolean;
}

export const EMPTY: DeploymentLog = {
  lines: [],
  earlierLines: 0,
  laterLinesCut: false,
  gateLines: 0,
  status: null,
  ended: false,
  connected: false,
};
const isGateLine = (line: LogLine) => /^(Waiting: |Approved by )/.test(line.Data);
const logKey = (deploymentId: string) => ['deployment-log', deploymentId] as const;

/** The least level of the lines streamed (GET /api/deployment/events `level`); null: every line. */
export type LevelFloor = NonNullable<
  NonNullable<paths['/api/deployment/events']['get']['parameters']['query']>['level']
>;

/**
 * The log with a batch of lines added, within KEPT_LINES: following the tail, the oldest are
 * dropped (once DROP_EVERY more arrived) and counted as earlier lines; a window from a line
 * (`window`) keeps its first KEPT_LINES and says later lines were cut.
 */
export function withBatch(log: DeploymentLog, batch: LogLine[], window: boolean): DeploymentLog {
  const gateLines = log.gateLines + batch.filter(isGateLine).length;
  if (window) {
    const room = KEPT_LINES - log.lines.length;
    if (batch.length < room) return { ...log, lines: log.lines.concat(batch), gateLines };
    const lines = log.lines.concat(batch.slice(0, room));
    return { ...log, lines, gateLines, laterLinesCut: true, connected: false };
  }
  const lines = log.lines.concat(batch);
  if (lines.length <= KEPT_LINES + DROP_EVERY) return { ...log, lines, gateLines };
  const dropped = lines.length - KEPT_LINES;
  return { ...log, lines: lines.slice(dropped), gateLines, earlierLines: (log.earlierLines ?? 0) + dropped };
}

/**
 * `fromTick`: a window from that line (a permalink's); null: the log's tail, followed live.
 * `level`: only the lines at that level and above.
 */
export function useDeploymentEvents(
  deploymentId: string,
  fromTick: string | null = null,
  level: LevelFloor | null = null,
): DeploymentLog {
  const queryClient = useQueryClient();
  const { data } = useQuery({
    queryKey: logKey(deploymentId),
    queryFn: () => EMPTY,
    // Only the stream writes this entry: a refetch would wipe the lines it delivered.
    staleTime: Infinity,
    // Each batch of lines makes a new entry: comparing it deeply with the last one (the default)
    // walks every line held, on every batch.
    structuralSharing: false,
    refetchOnMount: false,
    gcTime: 0,
  });
  useEffect(() => {
    // Events are handled one at a time: each reads the entry, changes it and writes it back.
    const current = () => queryClient.getQueryData<DeploymentLog>(logKey(deploymentId)) ?? EMPTY;
    const write = (log: DeploymentLog) => void queryClient.setQueryData(logKey(deploymentId), log);
    const update = (change: (log: DeploymentLog) => DeploymentLog) => write(change(current()));
    // A new stream starts afresh: drop what an earlier one of this page left.
    write({ ...EMPTY, earlierLines: fromTick === null ? 0 : null });
    const query = `deploymentId=${encodeURIComponent(deploymentId)}${level ? `&level=${level}` : ''}`;
    // `after` is strictly after: the linked line itself is the window's first.
    const source = new EventSource(
      fromTick === null
        ? `/api/deployment/events?${query}&tail=${KEPT_LINES}`
        : `/api/deployment/events?${query}&after=${BigInt(fromTick) - 1n}`,
    );
    const onStatus = (event: MessageEvent<string>) => {
      const status = parseJson<DeploymentStatus>(event.data);
      update((log) => ({ ...log, status }));
      void queryClient.invalidateQueries({ queryKey: ['deployment-page', deploymentId] });
    };
    source.addEventListener('open', () => update((log) => ({ ...log, connected: true })));
    source.addEventListener('tail', (event: MessageEvent<string>) => {
      const { earlierLines } = parseJson<{ earlierLines: number }>(event.data);
      update((log) => ({ ...log, earlierLines }));
    });
    source.addEventListener('status', onStatus);
    source.addEventListener('logs', (event: MessageEvent<string>) => {
      const next = withBatch(current(), parseJson<LogItem[]>(event.data).map(kept), fromTick !== null);
      // A window from a line ends where the page is full: the lines after it are not read at all.
      if (next.laterLinesCut) source.close();
      write(next);
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
  }, [deploymentId, fromTick, level, queryClient]);
  return data ?? EMPTY;
}

export type ErrorBody = components['schemas']['ErrorBody'];
