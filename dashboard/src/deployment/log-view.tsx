/**
 * The live log: lines pushed over SSE, virtualized (only the visible rows exist in the DOM, so a
 * 100k-line log scrolls smoothly), filtered by level, each line with a permalink (#L<tick>), raw
 * download, and follow-the-tail while the reader is at the bottom. The page holds a bounded part
 * of a long log (use-deployment-events.ts): it says what it leaves out, the download (served by
 * the server) has every line, a permalink to a line before the part held opens a window there,
 * and the level filter over such a log asks the server for the whole log's lines at that level.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { DeploymentLog, LevelFloor, LogLine } from '../api/use-deployment-events.ts';
import { parseAnsi } from './ansi.ts';

const ROW_HEIGHT = 20;
type LevelFilter = 'All' | 'Warning' | 'Error';
const RANK: Record<string, number> = { Trace: 0, Debug: 0, Information: 1, Warning: 2, Error: 3, Critical: 3 };

const floorRank = (floor: LevelFloor | null) => (floor === null ? 0 : floor === 'Warning' ? 2 : 3);

function shown(line: LogLine, filter: LevelFilter): boolean {
  if (filter === 'All') return true;
  return (RANK[line.LogLevel] ?? 1) >= floorRank(filter);
}

const count = (n: number) => n.toLocaleString('en-US');

export function LogView({
  deploymentId,
  log,
  live,
  streamLevel,
  onStreamLevel,
  onOpenFrom,
  onFollowLatest,
}: {
  deploymentId: string;
  log: Pick<DeploymentLog, 'lines' | 'earlierLines' | 'laterLinesCut'>;
  live: boolean;
  /** The level the server filters the lines by (null: every line is streamed). */
  streamLevel: LevelFloor | null;
  /** Streams the log again with only the lines at this level and above (null: every line). */
  onStreamLevel: (level: LevelFloor | null) => void;
  /** Opens a window of the log from this line (a permalink to a line before the lines held). */
  onOpenFrom: (tick: string) => void;
  /** Back from such a window to the tail of the log, followed live. */
  onFollowLatest: () => void;
}) {
  const { lines, earlierLines, laterLinesCut } = log;
  const [filter, setFilter] = useState<LevelFilter>('All');
  const [follow, setFollow] = useState(true);
  const linked = window.location.hash.startsWith('#L') ? window.location.hash.slice(2) : null;
  const visible = useMemo(() => (filter === 'All' ? lines : lines.filter((l) => shown(l, filter))), [lines, filter]);
  // Filtering the lines held is enough when they are the whole stream and it has every line
  // asked for; else the server streams the whole log's lines at that level (a 5M-line log's
  // early warnings are not among its last 100 000 lines).
  useEffect(() => {
    const floor = filter === 'All' ? null : filter;
    if (floor === streamLevel) return;
    const holdsWholeStream = earlierLines === 0 && !laterLinesCut;
    if (holdsWholeStream && floorRank(floor) >= floorRank(streamLevel)) return;
    onStreamLevel(floor);
  }, [filter, streamLevel, earlierLines, laterLinesCut, onStreamLevel]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: visible.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 20,
  });
  const jumped = useRef(false);
  // Set by the jump to a linked line, cleared by the reader's own input. The jump's scroll is not
  // the reader reaching the bottom: centred, a line among the last ones held leaves the view at
  // the bottom (lines arrive a page at a time), and taking that for following the tail would
  // scroll the linked line away when the next page arrives.
  const pinned = useRef(false);
  const first = lines[0]?.CreatedUtcTick;
  useEffect(() => {
    if (linked && !jumped.current) {
      const index = visible.findIndex((l) => l.CreatedUtcTick === linked);
      if (index >= 0) {
        jumped.current = true;
        pinned.current = true;
        setFollow(false);
        virtualizer.scrollToIndex(index, { align: 'center' });
      } else if (first !== undefined && earlierLines !== 0 && /^\d+$/.test(linked) && BigInt(linked) < BigInt(first)) {
        // Before the lines held: read the log from that line instead.
        setFollow(false);
        onOpenFrom(linked);
      }
      return;
    }
    if (follow && visible.length > 0) virtualizer.scrollToIndex(visible.length - 1, { align: 'end' });
  }, [visible, follow, linked, virtualizer, first, earlierLines, onOpenFrom]);
  const onScroll = () => {
    const element = scroller.current;
    if (!element || pinned.current) return;
    setFollow(element.scrollHeight - element.scrollTop - element.clientHeight < ROW_HEIGHT * 2);
  };
  const unpin = () => {
    pinned.current = false;
  };
  return (
    <section className="log" aria-label="Log">
      <div className="log-tools">
        <h2>Log</h2>
        <label>
          Level
          <select value={filter} onChange={(e) => setFilter(e.target.value as LevelFilter)}>
            <option value="All">All lines</option>
            <option value="Warning">Warnings and errors</option>
            <option value="Error">Errors only</option>
          </select>
        </label>
        <span className="small muted" role="status">
          {visible.length} of {lines.length} lines
          {streamLevel ? ' · searched the whole log' : ''}
          {earlierLines ? ` · ${count(earlierLines)} earlier not shown` : ''}
          {laterLinesCut ? ' · later lines not shown' : ''}
          {live ? ' · live' : ''}
        </span>
        {/* The server writes the file: every line, however long the log (the page holds only a part). */}
        <a className="button" href={`/api/deployment/log?deploymentId=${encodeURIComponent(deploymentId)}`} download>
          Download raw log
        </a>
      </div>
      {earlierLines !== 0 && (
        <p className="log-notice small" role="note">
          {earlierLines === null
            ? 'From the linked line on.'
            : `The first ${count(earlierLines)} lines${streamLevel ? ' at this level' : ''} are not shown here: the raw log has every line.`}
        </p>
      )}
      <div
        className="log-lines"
        ref={scroller}
        onScroll={onScroll}
        onWheel={unpin}
        onPointerDown={unpin}
        onKeyDown={unpin}
        onTouchStart={unpin}
        role="log"
        aria-label="Log lines"
        tabIndex={0}
      >
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative' }}>
          {virtualizer.getVirtualItems().map((row) => {
            const line = visible[row.index]!;
            return (
              <div
                key={line.CreatedUtcTick}
                className={`log-line level-${line.LogLevel}${line.CreatedUtcTick === linked ? ' linked' : ''}`}
                style={{ transform: `translateY(${row.start}px)`, height: ROW_HEIGHT }}
              >
                <a className="log-time" href={`#L${line.CreatedUtcTick}`} title="Link to this line">
                  {line.CreatedUtc.slice(11, 23)}
                </a>
                <span className="log-level">{line.LogLevel}</span>
                <span className="log-text">
                  {parseAnsi(line.Data).map((segment, i) =>
                    segment.className ? (
                      <span key={i} className={segment.className}>
                        {segment.text}
                      </span>
                    ) : (
                      segment.text
                    ),
                  )}
                </span>
              </div>
            );
          })}
        </div>
      </div>
      {laterLinesCut && (
        <p className="log-notice small" role="note">
          The lines after these are not shown here.{' '}
          <button
            type="button"
            onClick={() => {
              pinned.current = false;
              setFollow(true);
              onFollowLatest();
            }}
          >
            Follow the latest lines
          </button>
        </p>
      )}
    </section>
  );
}
