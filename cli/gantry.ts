/** The CLI's entry point: the built file (dist/cli/gantry.mjs) and `npx gantry` from a clone start here. */
import { run } from './main.ts';

process.exitCode = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
});
