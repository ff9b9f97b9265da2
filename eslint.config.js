// @ts-check
// Layering (which folder may import which) is enforced by test/architecture/import-rules.test.ts,
// which also tells type-only imports apart; this file holds the type-aware code rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const UNSAFE_ANY = [
  'no-unsafe-argument',
  'no-unsafe-assignment',
  'no-unsafe-call',
  'no-unsafe-member-access',
  'no-unsafe-return',
];
const off = (rules) => Object.fromEntries(rules.map((rule) => [`@typescript-eslint/${rule}`, 'off']));

export default tseslint.config(
  { ignores: ['node_modules/', 'coverage/', 'proto/gen/', 'client/schema.ts', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // A `let` read by a closure before its one assignment (the agent's connection) stays `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Bus implementations, Fastify plugins and store methods are async by their contract.
      '@typescript-eslint/require-await': 'off',
      // The gateway throws gRPC statuses ({ code, details }): grpc-js sends them as the call's status.
      '@typescript-eslint/only-throw-error': ['error', { allow: [{ from: 'file', name: 'GrpcStatus' }] }],
    },
  },
  // knex returns rows as `any`; each store module maps them to typed records at that boundary.
  { files: ['services/store/**'], rules: off(UNSAFE_ANY) },
  // Tests and benches read JSON response bodies, which are `any` by nature.
  { files: ['test/**', 'bench/**'], rules: { ...off(UNSAFE_ANY), '@typescript-eslint/no-explicit-any': 'off' } },
);
