/**
 * ANSI SGR colour codes in log text → styled segments. Only colours and bold are kept; every other
 * escape sequence is dropped. The text itself is rendered by React as text, never as HTML.
 */
export interface Segment {
  text: string;
  className: string;
}

const COLOURS = ['black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'];
// CSI sequences (ESC [ … final byte) and lone escapes: matching the escape character is the point.
// eslint-disable-next-line no-control-regex
const ESCAPE = /\u001b\[([0-9;]*)([A-Za-z])|\u001b/g;

export function parseAnsi(line: string): Segment[] {
  if (!line.includes('\u001b')) return [{ text: line, className: '' }];
  const segments: Segment[] = [];
  let fg: string | null = null;
  let bold = false;
  let at = 0;
  const push = (text: string) => {
    if (!text) return;
    const classes = [fg ? `ansi-${fg}` : '', bold ? 'ansi-bold' : ''].filter(Boolean).join(' ');
    segments.push({ text, className: classes });
  };
  for (const match of line.matchAll(ESCAPE)) {
    push(line.slice(at, match.index));
    at = match.index + match[0].length;
    if (match[2] !== 'm') continue;
    const codes = (match[1] || '0').split(';').map(Number);
    for (const code of codes) {
      if (code === 0) {
        fg = null;
        bold = false;
      } else if (code === 1) bold = true;
      else if (code === 22) bold = false;
      else if (code === 39) fg = null;
      else if (code >= 30 && code <= 37) fg = COLOURS[code - 30]!;
      else if (code >= 90 && code <= 97) fg = `bright-${COLOURS[code - 90]!}`;
    }
  }
  push(line.slice(at));
  return segments;
}
