// Turns a byte stream into text lines: UTF-8 safe across chunk boundaries, CRLF-aware, and with
// over-long lines cut so a single log line never exceeds maxLineChars.
import { StringDecoder } from 'node:string_decoder';

export class LineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  readonly #onLine: (text: string) => void;
  readonly #maxLineChars: number;
  #partial = '';

  constructor(onLine: (text: string) => void, maxLineChars = 32 * 1024) {
    this.#onLine = onLine;
    this.#maxLineChars = maxLineChars;
  }

  push(chunk: Buffer): void {
    this.#consume(this.#partial + this.#decoder.write(chunk));
  }

  /** Emits whatever is left (a last line without a newline). */
  end(): void {
    const rest = this.#partial + this.#decoder.end();
    this.#partial = '';
    this.#consume(rest);
    if (this.#partial !== '') this.#emit(this.#partial);
    this.#partial = '';
  }

  #consume(text: string): void {
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    for (const line of lines) this.#emit(line);
    while (this.#partial.length > this.#maxLineChars) {
      this.#onLine(this.#partial.slice(0, this.#maxLineChars));
      this.#partial = this.#partial.slice(this.#maxLineChars);
    }
  }

  #emit(line: string): void {
    const text = line.endsWith('\r') ? line.slice(0, -1) : line;
    if (text.length <= this.#maxLineChars) {
      this.#onLine(text);
      return;
    }
    for (let start = 0; start < text.length; start += this.#maxLineChars) {
      this.#onLine(text.slice(start, start + this.#maxLineChars));
    }
  }
}
