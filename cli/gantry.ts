/** The CLI's entry point: the built file (dist/cli/gantry.mjs) and `npx gantry` from a clone start here. */
import { installLightFetchClasses } from './light-fetch-classes.ts';
import { run } from './main.ts';

// Before any request: Node's own Request, Response and Headers would load undici (~20 ms).
installLightFetchClasses();

const code = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env });
// Exit now rather than when the event loop drains: idle keep-alive sockets and timers of the HTTP
// client would hold a finished CLI open. stdout and stderr writes to files, pipes and terminals
// are synchronous on Linux and macOS, so nothing is lost.
process.exit(code);
