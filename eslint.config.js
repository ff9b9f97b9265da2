// @ts-check
// The type-aware code rules, and the architecture (README's folder map): which folder may import
// which, and that another folder is reached only through its index.ts.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * folder → the folders it may import at run time; `types`: also type-only imports of these.
 * Arrows: api/gateway → engine → domain → store → core. The table is the design: change it only
 * with it.
 */
const LAYERS = {
  'services/core': { runtime: [] },
  'services/store': { runtime: ['core'] },
  'services/bus': { runtime: ['core'] },
  'services/domain': { runtime: ['core', 'store'] },
  'services/packages': { runtime: ['core', 'store', 'domain'] },
  'services/engine': { runtime: ['core', 'domain', 'store', 'bus'] },
  'services/gateway': { runtime: ['core', 'domain', 'bus', 'proto'], types: ['engine'] },
  'services/api': { runtime: ['core', 'domain', 'engine', 'packages'], types: ['store'] },
  // environment/: the one schema of every environment variable, shared by the control plane's
  // config.ts and the agent's; a folder of its own because the agent may not import services/.
  agent: { runtime: ['proto', 'environment'] },
  proto: { runtime: [] },
  environment: { runtime: [] },
  // The CLI reaches the server only over HTTP, through the generated client (design §7).
  cli: { runtime: ['client'] },
  client: { runtime: [] },
};
const SERVICES = ['core', 'store', 'bus', 'domain', 'packages', 'engine', 'gateway', 'api'];
const TOP = ['agent', 'proto', 'cli', 'client', 'environment'];
/** An import path (relative, any depth) into folder `name` of services/ or of the repository. */
const into = (name) => `^(\\./)?(\\.\\./)+${TOP.includes(name) ? '' : '(services/)?'}${name}/`;

function layerRules(folder, { runtime, types = [] }) {
  const own = folder.split('/').at(-1);
  const others = [...SERVICES, ...TOP].filter((name) => name !== own);
  const patterns = [
    {
      regex: `${into(`(${others.join('|')})`)}(?!index\\.ts$).+`,
      message: 'Another folder is imported only through its index.ts (its public surface).',
    },
  ];
  for (const name of others.filter((n) => !runtime.includes(n))) {
    patterns.push({
      regex: into(name),
      allowTypeImports: types.includes(name),
      message: `${folder} may not import ${name}${types.includes(name) ? ' at run time (types only)' : ''}: the arrows are api/gateway → engine → domain → store → core (eslint.config.js LAYERS).`,
    });
  }
  return {
    files: [`${folder}/**/*.ts`],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns }] },
  };
}

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
  ...Object.entries(LAYERS).map(([folder, allowed]) => layerRules(folder, allowed)),
  // Composition roots: the only files that may import every folder (still through index.ts).
  {
    files: [
      'services/main.ts',
      'services/server.ts',
      'services/config.ts',
      'services/local-agent.ts',
      'services/rotate-master-key.ts',
      'services/store/migrate-cli.ts',
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^\\./(${SERVICES.join('|')})/(?!index\\.ts$).+`,
              message: 'Another folder is imported only through its index.ts (its public surface).',
            },
          ],
        },
      ],
    },
  },
  // knex returns rows as `any`; each store module maps them to typed records at that boundary.
  { files: ['services/store/**'], rules: off(UNSAFE_ANY) },
  // Tests and benches read JSON response bodies, which are `any` by nature.
  { files: ['test/**', 'bench/**'], rules: { ...off(UNSAFE_ANY), '@typescript-eslint/no-explicit-any': 'off' } },
);
