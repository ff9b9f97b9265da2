/** The CLI's entry point: the built file (dist/cli/gantry.mjs) and `npx gantry` from a clone start here. */
import v8 from 'node:v8';
import { run } from './main.ts';

// fetch parses HTTP with llhttp compiled to WebAssembly; V8 then optimises that code on
// background threads, and a process that exits waits for them: ~80-100 ms after the result was
// printed, paid by every CLI process (measured with bench/cli). Baseline-compiled code (Liftoff)
// is plenty for parsing a few responses, and set before the first fetch it removes that wait.
v8.setFlagsFromString('--liftoff-only');

const code = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
// Exit now rather than when the event loop drains: idle keep-alive sockets and timers of the HTTP
// client would hold a finished CLI open. stdout and stderr writes to files, pipes and terminals
// are synchronous on Linux and macOS, so nothing is lost.
process.exit(code);
