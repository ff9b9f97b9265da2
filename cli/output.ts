/**
 * The only writer of stdout and stderr. stdout carries the result only (a table, or with
 * --output json exactly one JSON document), so `gantry … --output json | jq` always works;
 * progress, status changes and diagnostics go to stderr. Deployment log lines go to stdout in
 * text mode (they are what a person watches) except errors, which go to stderr; with JSON they
 * all go to stderr.
 */
import type { Writable } from 'node:stream';

type Env = Record<string, string | undefined>;

export interface Stream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const CODES = {
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  dim: [2, 22],
  bold: [1, 22],
  cyan: [36, 39],
} as const;
export type Style = keyof typeof CODES;

/** NO_COLOR (any value) turns colour off, FORCE_COLOR (other than 0/false) on; otherwise only on a terminal. */
export function colorEnabled(stream: Stream, env: Env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  const force = env.FORCE_COLOR;
  if (force !== undefined && force !== '') return force !== '0' && force !== 'false';
  return stream.isTTY === true;
}

function painter(enabled: boolean) {
  return (style: Style, text: string) =>
    enabled ? `\u001b[${CODES[style][0]}m${text}\u001b[${CODES[style][1]}m` : text;
}

/** Renders rows as aligned columns under a header (plain text, no borders: easy to grep). */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

export interface ProgressBar {
  update(done: number): void;
  finish(message: string): void;
}

const MIB = 1024 * 1024;
export const formatBytes = (n: number) =>
  n >= MIB ? `${(n / MIB).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} B`;

export class Output {
  readonly json: boolean;
  readonly #stdout: Stream;
  readonly #stderr: Stream;
  readonly #paintOut: ReturnType<typeof painter>;
  readonly #paintErr: ReturnType<typeof painter>;

  constructor(options: { json: boolean; stdout: Stream | Writable; stderr: Stream | Writable; env: Env }) {
    this.json = options.json;
    this.#stdout = options.stdout;
    this.#stderr = options.stderr;
    this.#paintOut = painter(colorEnabled(this.#stdout, options.env));
    this.#paintErr = painter(colorEnabled(this.#stderr, options.env));
  }

  /** The command's result: `value` as JSON, or the text `render` makes from it. Call once. */
  result<T>(value: T, render: (value: T, paint: (style: Style, text: string) => string) => string): void {
    this.#stdout.write(this.json ? JSON.stringify(value, null, 2) + '\n' : render(value, this.#paintOut));
  }

  /** A progress or status line for people (stderr in both modes). */
  note(text: string, style?: Style): void {
    this.#stderr.write((style ? this.#paintErr(style, text) : text) + '\n');
  }

  warn(text: string): void {
    this.#stderr.write(this.#paintErr('yellow', text) + '\n');
  }

  error(text: string): void {
    this.#stderr.write(this.#paintErr('red', text) + '\n');
  }

  /** One deployment log line: errors to stderr, the rest to stdout (stderr with --output json). */
  logLine(prefix: string, text: string, level: string): void {
    const isError = level === 'Error' || level === 'Critical';
    const toStderr = this.json || isError;
    const paint = toStderr ? this.#paintErr : this.#paintOut;
    const body = isError ? paint('red', text) : level === 'Warning' ? paint('yellow', text) : text;
    (toStderr ? this.#stderr : this.#stdout).write(`${prefix ? paint('dim', prefix) + ' ' : ''}${body}\n`);
  }

  /** A byte progress bar on a terminal; plain start and end lines otherwise (CI logs). */
  progress(label: string, totalBytes: number): ProgressBar {
    const stream = this.#stderr;
    if (stream.isTTY !== true) {
      stream.write(`${label}: uploading ${formatBytes(totalBytes)}\n`);
      return { update: () => undefined, finish: (message) => void stream.write(`${label}: ${message}\n`) };
    }
    let lastDrawn = -1;
    const draw = (done: number) => {
      const ratio = totalBytes === 0 ? 1 : Math.min(1, done / totalBytes);
      const percent = Math.floor(ratio * 100);
      if (percent === lastDrawn) return;
      lastDrawn = percent;
      const width = 30;
      const filled = Math.round(ratio * width);
      const bar = '#'.repeat(filled) + '-'.repeat(width - filled);
      stream.write(
        `\r${label} [${bar}] ${String(percent).padStart(3)}% ${formatBytes(done)}/${formatBytes(totalBytes)}`,
      );
    };
    draw(0);
    return {
      update: draw,
      finish: (message) => void stream.write(`\r\u001b[2K${label}: ${message}\n`),
    };
  }
}
