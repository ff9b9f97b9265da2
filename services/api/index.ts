/** The HTTP API's public surface: the composition root imports only this file. */
export { buildApp } from './app.ts';
export type { BuildAppOptions } from './app.ts';
