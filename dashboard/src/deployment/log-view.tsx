/**
 * The live log: lines pushed over SSE, virtualized (only the visible rows exist in the DOM, so a
 * 100k-line log scrolls smoothly), filtered by level, each line with a permalink (#L<tick>), raw
 * download, and follow-the-tail while the reader is at the bottom.
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import type { LogLine } from '../api/use-deployment-events.ts';
import { parseAnsi, stripAnsi } from './ansi.ts';

const ROW_HEIGHT = 20;
type LevelFilter = 'All' | 'Warning' | 'Error';
const RANK: Record<string, number> = { Trace: 0, Debug: 0, Information: 1, Warning: 2, Error: 3, Critical: 3 };

function shown(line: LogLine, filter: LevelFilter): boolean {
  if (filter === 'All') return true;
  return (RANK[line.LogLevel] ?? 1) >= (filter === 'Warning' ? 2 : 3);
}

function download(deploymentId: string, lines: LogLine[]): void {
  const text = lines.map((l) => `${l.CreatedUtc} ${l.LogLevel.padEnd(11)} ${stripAnsi(l.Data)}`).join('\n') + '\n';
  const url = URL.createObjectURL(new Blob([text], { type: 'text/plain;charset=utf-8' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `deployment-${deploymentId}.log`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}

export function LogView({ deploymentId, lines, live }: { deploymentId: string; lines: LogLine[]; live: boolean }) {
  const [filter, setFilter] = useState<LevelFilter>('All');
  const [follow, setFollow] = useState(true);
  const linked = window.location.hash.startsWith('#L') ? window.location.hash.slice(2) : null;
  const visible = useMemo(() => (filter === 'All' ? lines : lines.filter((l) => shown(l, filter))), [lines, filter]);
  const scroller = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count: visible.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 20,
  });
  const jumped = useRef(false);
  useEffect(() => {
    if (linked && !jumped.current) {
      const index = visible.findIndex((l) => l.CreatedUtcTick === linked);
      if (index >= 0) {
        jumped.current = true;
        setFollow(false);
        virtualizer.scrollToIndex(index, { align: 'center' });
      }
      return;
    }
    if (follow && visible.length > 0) virtualizer.scrollToIndex(visible.length - 1, { align: 'end' });
  }, [visible, follow, linked, virtualizer]);
  const onScroll = () => {
    const element = scroller.current;
    if (!element) return;
    setFollow(element.scrollHeight - element.scrollTop - element.clientHeight < ROW_HEIGHT * 2);
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
          {visible.length} of {lines.length} lines{live ? ' · live' : ''}
        </span>
        <button type="button" onClick={() => download(deploymentId, lines)}>
          Download raw log
        </button>
      </div>
      <div className="log-lines" ref={scroller} onScroll={onScroll} role="log" aria-label="Log lines" tabIndex={0}>
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
    </section>
  );
}
