// Lint is part of the test command (test/lint.test.ts). Its main job here is the boundary:
// workflow code and the pure rules may not reach Node, the network, or other Temporal packages.
import tseslint from 'typescript-eslint';

const sideEffectModules = {
  patterns: [
    {
      group: ['node:*'],
      message: 'Workflow code and pure rules may not use Node built-ins: do the I/O in an activity.',
    },
    {
      group: ['@kubernetes/client-node', 'ssh2', '@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing'],
      message: 'Workflow code and pure rules may not touch clusters, hosts or Temporal clients: call an activity.',
    },
    {
      group: ['**/activities/*', '**/activities/**', '**/worker/**', '**/client/**', '**/tooling/**'],
      allowTypeImports: true,
      message: 'Only `import type` from activities/; workflows never import worker, client or tooling code.',
    },
  ],
  paths: [
    'fs',
    'fs/promises',
    'child_process',
    'net',
    'http',
    'https',
    'http2',
    'dns',
    'os',
    'path',
    'crypto',
    'process',
    'timers',
    'worker_threads',
    'cluster',
    'dgram',
    'tls',
    'readline',
    'stream',
    'zlib',
    'url',
    'util',
    'v8',
    'vm',
  ].map((name) => ({ name, message: 'Workflow code and pure rules may not use Node built-ins: do the I/O in an activity.' })),
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'test-output/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['workflows/**/*.ts', 'rules/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', sideEffectModules],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No process state in workflow code or pure rules.' },
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'fetch', message: 'No network in workflow code or pure rules: call an activity.' },
      ],
    },
  },
  {
    // Workflows may read Temporal's deterministic clock; the pure rules take `now` as an argument.
    files: ['rules/**/*.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Pure rules take `now` as an argument.' },
        { object: 'Math', property: 'random', message: 'Pure rules are deterministic.' },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'Pure rules take `now` as an argument.' },
      ],
    },
  },
  {
    // Contracts cross every layer (workflow ids, metric names): plain constants that import nothing.
    files: ['contracts/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!\\./)', message: 'contracts/ imports nothing but other contracts: it is read by every layer.' }] },
      ],
    },
  },
  {
    // Activities are called by workflows, never the other way round: what both need lives in contracts/ or rules/.
    files: ['activities/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/workflows/*', '**/workflows/**'],
              allowTypeImports: true,
              message: 'Activities do not import workflow code: move what both need to contracts/ or rules/.',
            },
          ],
        },
      ],
    },
  },
  {
    // The CLI loads the Temporal client only when a command connects (client/temporal-sdk.ts).
    files: ['client/**/*.ts'],
    ignores: ['client/temporal-sdk.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@temporalio/client',
              allowTypeImports: true,
              message:
                'Load it through client/temporal-sdk.ts (loadTemporalClient, isClientError): commands that never connect skip 0.3 s of imports.',
            },
          ],
        },
      ],
    },
  },
);
