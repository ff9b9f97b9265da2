import fs from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { renderClientFiles } from '../../scripts/client-files.ts';

describe('client/ generated files', () => {
  it('match the OpenAPI document the server serves now (run `npm run generate:client` when this fails)', async () => {
    const rendered = await renderClientFiles();
    for (const [name, text] of Object.entries(rendered)) {
      const committed = await fs.readFile(new URL(`../../client/${name}`, import.meta.url), 'utf8');
      expect(committed, `client/${name} is out of date`).toBe(text);
    }
    expect(rendered['schema.ts']).toContain('"/api/release/deploy"');
  });
});
