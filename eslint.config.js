// Lint is part of the test command (test/lint.test.ts). Its main job here is the boundary:
// workflow code and the pure rules may not reach Node, the network, or other Temporal packages.
import tseslint from 'typescript-eslint';

// The layers and what each may import: ARCHITECTURE.md's table, enforced here (test/lint-boundaries.test.ts
// checks each ban on an example). `folder` matches an import of that top-level folder from anywhere below.
const folder = (...names) => names.flatMap((name) => [`**/${name}/*`, `**/${name}/**`]);

/** Product code (activities, client, worker, rules, workflows, contracts) never imports the test world, the demo, the benchmark, the stack or the tests. */
const notTheTestWorld = (...also) => ({
  group: folder('sim', 'demo', 'bench', 'stack', 'test', ...also),
  message:
    'Product code does not import sim/, demo/, bench/, stack/ or test/ (ARCHITECTURE.md); the rehearsal reaches the simulation through client/rehearse/twin.ts only.',
});

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
    notTheTestWorld(),
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

/**
 * What a file of client/ may not import. `worker`: the worker/ modules it may import at run time;
 * `twin`: the rehearsal's twin, which may import sim/, the worker and activities; `temporalClient`: the one
 * module that loads @temporalio/client at run time.
 */
function cliImports({ worker = [], twin = false, temporalClient = false }) {
  const patterns = [
    twin
      ? {
          group: folder('demo', 'bench', 'stack', 'test'),
          message: 'The twin runs the simulation (sim/), never the demo, the benchmark, the stack or the tests.',
        }
      : notTheTestWorld(),
  ];
  if (!twin) {
    patterns.push(
      {
        regex: worker.length ? `(^|/)worker/(?!(${worker.join('|')})\\.js$)` : '(^|/)worker/',
        message: `The CLI takes only the worker's connection settings (worker/config.ts, worker/payload-codec.ts); the worker's internals are the worker's.`,
      },
      {
        group: folder('activities'),
        allowTypeImports: true,
        message: 'The CLI talks to Temporal, never to a cluster: only `import type` from activities/.',
      },
      { group: ['@temporalio/worker'], message: 'The CLI does not run a worker in its own process (only the rehearsal’s twin does).' },
    );
  }
  return {
    patterns,
    paths: temporalClient
      ? []
      : [
          {
            name: '@temporalio/client',
            allowTypeImports: true,
            message:
              'Load it through client/temporal-sdk.ts (loadTemporalClient, isClientError): commands that never connect skip 0.3 s of imports.',
          },
        ],
  };
}

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
    // The pure rules are read by every layer: they import contracts/ and nothing else of the repository.
    files: ['rules/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          ...sideEffectModules,
          patterns: [
            ...sideEffectModules.patterns,
            {
              group: folder('workflows', 'activities'),
              message:
                'The pure rules import contracts/ and other rules only: workflows and activities import them, not the other way round.',
            },
          ],
        },
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
            { group: folder('client', 'worker'), message: 'Activities are called by the worker; they do not import it or the CLI.' },
            notTheTestWorld(),
          ],
        },
      ],
    },
  },
  {
    // The CLI: rules/, contracts/, workflows/ (messages, and the workflow functions it starts by type),
    // tooling/, the worker's connection settings (worker/config.ts, worker/payload-codec.ts) and `import type`
    // from activities/. The worker command also runs the worker (worker/run-worker.ts); the rehearsal's twin
    // (client/rehearse/twin.ts) runs a simulation and a worker of its own.
    files: ['client/**/*.ts'],
    ignores: ['client/temporal-sdk.ts', 'client/rehearse/twin.ts', 'client/commands/worker.ts'],
    rules: { 'no-restricted-imports': ['error', cliImports({ worker: ['config', 'payload-codec'] })] },
  },
  {
    files: ['client/commands/worker.ts'],
    rules: { 'no-restricted-imports': ['error', cliImports({ worker: ['config', 'run-worker'] })] },
  },
  {
    files: ['client/rehearse/twin.ts'],
    rules: { 'no-restricted-imports': ['error', cliImports({ twin: true })] },
  },
  {
    files: ['client/temporal-sdk.ts'],
    rules: { 'no-restricted-imports': ['error', cliImports({ worker: [], temporalClient: true })] },
  },
  {
    // The worker process: activities/, workflows/ (its bundle), rules/, contracts/, tooling/; never the CLI.
    files: ['worker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: folder('client'), message: 'The CLI imports the worker (its connection settings), not the other way round.' },
            notTheTestWorld(),
          ],
        },
      ],
    },
  },
  {
    // The production stack without Docker: anything but the test world; nothing of the product imports it (the bans above).
    files: ['stack/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: folder('sim', 'demo', 'bench', 'test'),
              message:
                'stack/ runs in production: it does not import sim/, demo/, bench/ or test/ (shared process helpers live in tooling/).',
            },
          ],
        },
      ],
    },
  },
  {
    // Build and process helpers, read by every layer that runs a program: they import nothing of the repository but tooling/.
    files: ['tooling/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.\\./', message: 'tooling/ imports nothing of the repository outside tooling/.' }] },
      ],
    },
  },
  {
    // Small functions with names that explain themselves (issue 37): a function of the product, the
    // simulation, the demo, the benchmark or the stack over 80 lines (blank lines and comments aside)
    // is split into named parts. The tests are not held to it (a test reads top to bottom).
    files: ['{activities,client,worker,rules,workflows,contracts,tooling,demo,sim,bench,stack}/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
);
