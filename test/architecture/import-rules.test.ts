/**
 * The folder map is enforced by lint (eslint.config.js LAYERS, `npm run lint`): this holds the
 * rule to what it must refuse, so a config edit cannot silently turn it into a no-op.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/**
 * Only the import rule, without type information: the type-aware rules need the whole TypeScript
 * program (~35 s on CI for the tree), which `npm run lint` builds already; this rule reads imports alone.
 */
const eslint = new ESLint({
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ruleId === '@typescript-eslint/no-restricted-imports',
});

/** Lints `code` as if it were the file at `filePath` (its folder's rules apply). */
async function importErrors(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports').map((m) => m.message);
}

describe('import rules (lint)', () => {
  it('refuses a deep import into another folder and an import against the arrows', async () => {
    const errors = await importErrors(
      'services/domain/channels.ts',
      "import { FINAL_STATUSES } from '../core/vocabulary.ts';\nimport { createEngine } from '../engine/index.ts';\nexport const probe = [FINAL_STATUSES, createEngine];\n",
    );
    expect(errors).toEqual([
      expect.stringContaining('Another folder is imported only through its index.ts'),
      expect.stringContaining('services/domain may not import engine'),
    ]);
  });

  it('lets types cross where the table says so, and not values', async () => {
    const code = "import type { AgentPort } from '../engine/index.ts';\nexport type P = AgentPort;\n";
    expect(await importErrors('services/gateway/wire.ts', code)).toEqual([]);
    expect(await importErrors('services/gateway/wire.ts', code.replace('import type', 'import'))).toEqual([
      expect.stringContaining('services/gateway may not import engine at run time'),
    ]);
  });

  it('keeps the CLI on the generated client and the agent off the server', async () => {
    expect(
      await importErrors(
        'cli/api.ts',
        "import { createDb } from '../services/store/index.ts';\nexport { createDb };\n",
      ),
    ).toEqual([expect.stringContaining('cli may not import store')]);
    expect(
      await importErrors('agent/version.ts', "import { newId } from '../services/core/index.ts';\nexport { newId };\n"),
    ).toEqual([expect.stringContaining('agent may not import core')]);
  });

  it('passes the tree as it is', async () => {
    const results = await eslint.lintFiles(['services', 'agent', 'proto', 'cli', 'client', 'environment']);
    const broken = results.flatMap((r) =>
      r.messages
        .filter((m) => m.ruleId === '@typescript-eslint/no-restricted-imports')
        .map((m) => `${r.filePath}: ${m.message}`),
    );
    expect(broken).toEqual([]);
  }, 120_000);
});
