// Lint: typescript-eslint's type-checked rules over every TypeScript source. The no-lease-left-held
// rule (SPEC I3) lives in async cleanup, where an un-awaited promise is the likely bug: floating and
// misused promises are errors everywhere. Tests and benchmarks read JSON off the wire and drive
// mocks, so the "unsafe any" family and unbound-method are relaxed there, and only there.
// Boundaries (BRIEF "Layout"): lib/ is the domain, with no AWS event types (functions/ adapts
// them); only the composition root (lib/runtime.ts) and the DynamoDB package itself reach into
// lib/lineage/dynamo/; the client package imports nothing from the server.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const ONE_ERROR_ROOT = {
  selector: "ClassDeclaration[superClass.name='Error']",
  message: 'one error root: extend ServiceError (lib/errors.ts), which carries status, code, retryable, details and cause.',
};
const ONE_CONFIG = {
  selector: "MemberExpression[object.name='process'][property.name='env']",
  message: 'one config: read the environment in lib/config.ts (or the composition root, lib/runtime.ts).',
};

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      '.serverless/',
      '.esbuild/',
      'dist/',
      'lib/client/dist/',
      'bench/results/',
      'coverage/',
      '**/*.cjs',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  { languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
    },
  },
  {
    files: ['lib/**/*.ts'],
    ignores: ['lib/runtime.ts', 'lib/lineage/dynamo/**', 'lib/client/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'aws-lambda', message: 'lib/ has no AWS event types: adapt the event in functions/.' }],
          patterns: [
            {
              regex: '(^|/)lineage/dynamo/|^\\./dynamo/',
              message: 'DynamoDB internals: reach them through the store contract (lib/lineage) or the runtime.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['lib/runtime.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'aws-lambda', message: 'lib/ has no AWS event types: adapt the event in functions/.' }] },
      ],
    },
  },
  {
    files: ['lib/lineage/dynamo/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'aws-lambda', message: 'lib/ has no AWS event types: adapt the event in functions/.' }],
          patterns: [
            {
              regex: '(^|/)(api|compaction|compressors)/',
              message: 'the store imports no API or compaction code: the sweep bundle carries the store alone (P4).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['lib/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'aws-lambda', message: 'the client package imports nothing from the server.' }],
          patterns: [{ regex: '^\\.\\./', message: 'the client package (its own npm package) imports nothing from the server.' }],
        },
      ],
    },
  },
  // One error root (lib/errors.ts ServiceError) and one config (process.env is read by config.ts and
  // the composition root only): issue 25.
  {
    files: ['lib/**/*.ts'],
    ignores: ['lib/errors.ts', 'lib/config.ts', 'lib/runtime.ts', 'lib/client/**'],
    rules: { 'no-restricted-syntax': ['error', ONE_ERROR_ROOT, ONE_CONFIG] },
  },
  { files: ['lib/config.ts', 'lib/runtime.ts'], rules: { 'no-restricted-syntax': ['error', ONE_ERROR_ROOT] } },
  {
    files: ['lib/client/**/*.ts'],
    ignores: ['lib/client/errors.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        { ...ONE_ERROR_ROOT, message: 'the client has one error root: extend LineageError (lib/client/errors.ts).' },
      ],
    },
  },
  // bench/ imports the shared fixtures (test/fixtures); no test imports bench/ (issue 25).
  {
    files: ['test/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)bench/', message: 'tests do not import bench/: share through test/fixtures or infra/.' }] },
      ],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/require-await': 'off',
    },
  },
);
