/** cli/output.ts: where each kind of text goes, colours by NO_COLOR/FORCE_COLOR, the progress bar. */
import { describe, expect, it } from 'vitest';
import { colorEnabled, Output, renderTable } from '../../cli/output.ts';

function streams(isTTY = false) {
  const make = () => {
    const stream = { text: '', isTTY, write: (t: string) => (stream.text += t) };
    return stream;
  };
  return { stdout: make(), stderr: make() };
}

describe('Output', () => {
  it('writes only the JSON document to stdout with --output json; log lines and notes go to stderr', () => {
    const { stdout, stderr } = streams();
    const out = new Output({ json: true, stdout, stderr, env: {} });
    out.note('Started deployment d1');
    out.logLine('[Build @ web-1]', 'compiling', 'Information');
    out.logLine('[Build @ web-1]', 'boom', 'Error');
    out.result({ ok: true }, () => 'not used');
    expect(JSON.parse(stdout.text)).toEqual({ ok: true });
    expect(stderr.text).toBe('Started deployment d1\n[Build @ web-1] compiling\n[Build @ web-1] boom\n');
  });

  it('writes log lines to stdout in text mode, except errors, which go to stderr', () => {
    const { stdout, stderr } = streams();
    const out = new Output({ json: false, stdout, stderr, env: {} });
    out.logLine('[S @ m]', 'fine', 'Information');
    out.logLine('[S @ m]', 'careful', 'Warning');
    out.logLine('[S @ m]', 'broken', 'Critical');
    expect(stdout.text).toBe('[S @ m] fine\n[S @ m] careful\n');
    expect(stderr.text).toBe('[S @ m] broken\n');
  });

  it('colours on a terminal unless NO_COLOR is set, and off a terminal when FORCE_COLOR is', () => {
    expect(colorEnabled({ isTTY: true, write: () => true }, {})).toBe(true);
    expect(colorEnabled({ isTTY: true, write: () => true }, { NO_COLOR: '1' })).toBe(false);
    expect(colorEnabled({ isTTY: false, write: () => true }, {})).toBe(false);
    expect(colorEnabled({ isTTY: false, write: () => true }, { FORCE_COLOR: '1' })).toBe(true);
    expect(colorEnabled({ isTTY: true, write: () => true }, { FORCE_COLOR: '0' })).toBe(false);
    const { stdout, stderr } = streams();
    new Output({ json: false, stdout, stderr, env: { FORCE_COLOR: '1' } }).error('failed');
    expect(stderr.text).toBe('\u001b[31mfailed\u001b[39m\n');
  });

  it('draws a byte progress bar on a terminal and plain start/end lines elsewhere', () => {
    const tty = streams(true);
    const bar = new Output({ json: false, ...tty, env: {} }).progress('App.1.0.0.zip', 2048);
    bar.update(1024);
    bar.update(1025);
    bar.update(2048);
    bar.finish('uploaded');
    expect(tty.stderr.text).toContain('\rApp.1.0.0.zip [###############---------------]  50% 1.0 KiB/2.0 KiB');
    expect(tty.stderr.text).toContain('100% 2.0 KiB/2.0 KiB');
    expect(tty.stderr.text.endsWith('App.1.0.0.zip: uploaded\n')).toBe(true);
    // Redrawn only when the whole percentage changes.
    expect(tty.stderr.text.match(/ 50%/g)).toHaveLength(1);

    const plain = streams(false);
    const quiet = new Output({ json: false, ...plain, env: {} }).progress('App.1.0.0.zip', 2048);
    quiet.update(1024);
    quiet.finish('uploaded');
    expect(plain.stderr.text).toBe('App.1.0.0.zip: uploading 2.0 KiB\nApp.1.0.0.zip: uploaded\n');
  });

  it('aligns table columns', () => {
    expect(
      renderTable(
        ['NAME', 'STATUS'],
        [
          ['web-1', 'Online'],
          ['database', 'Offline'],
        ],
      ),
    ).toBe('NAME      STATUS\nweb-1     Online\ndatabase  Offline\n');
  });
});
