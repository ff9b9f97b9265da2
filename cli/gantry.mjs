#!/usr/bin/env node
// `npx gantry` from a clone (after npm ci): runs the TypeScript sources through tsx. What ships is
// the single file dist/cli/gantry.mjs (npm run build:cli), which needs nothing but Node 20.
import { register } from 'tsx/esm/api';

register();
await import('./gantry.ts');
