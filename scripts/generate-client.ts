/** `npm run generate:client`: writes client/openapi.json and client/schema.ts (see client-files.ts). */
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderClientFiles } from './client-files.ts';

const folder = fileURLToPath(new URL('../client/', import.meta.url));
for (const [name, text] of Object.entries(await renderClientFiles())) await fs.writeFile(folder + name, text);
process.stdout.write('client/openapi.json and client/schema.ts written\n');
