import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hooksAt, parseHooks, RuleError } from '../../rules/index.js';

const BAD: { name: string; hooks: unknown; error: RegExp }[] = [
  { name: 'not a list', hooks: { name: 'x' }, error: /^hooks must be a list of hooks$/ },
  {
    name: 'a command that is not a list of words',
    hooks: [{ name: 'ticket', at: ['beforeRun'], command: '/usr/local/bin/ticket open --id $CHG' }],
    error:
      /^hooks\[0\]\.command must be a list of words, run without a shell \(e\.g\. \[\/usr\/local\/bin\/change-ticket, open\]\), got "\/usr\/local\/bin\/ticket open/,
  },
  {
    name: 'a word that is not a string',
    hooks: [{ name: 't', at: ['beforeRun'], command: ['/bin/t', 3] }],
    error: /^hooks\[0\]\.command must be a list of words/,
  },
  {
    name: 'a relative program',
    hooks: [{ name: 't', at: ['beforeRun'], command: ['ticket', 'open'] }],
    error: /^hooks\[0\]\.command\[0\] must be an absolute path/,
  },
  {
    name: 'an unknown point',
    hooks: [{ name: 't', at: ['beforeHops'], command: ['/bin/true'] }],
    error: /^hooks\[0\]\.at\[0\]: unknown point "beforeHops" \(beforeRun, beforeHop, /,
  },
  {
    name: 'both command and url',
    hooks: [{ name: 't', at: ['beforeRun'], command: ['/bin/true'], url: 'https://h.example' }],
    error: /^hooks\[0\] must have exactly one of command or url/,
  },
  { name: 'neither', hooks: [{ name: 't', at: ['beforeRun'] }], error: /^hooks\[0\] must have exactly one of command or url/ },
  {
    name: 'an insecure url',
    hooks: [{ name: 't', at: ['afterRun'], url: 'http://cm.example/hook' }],
    error: /^hooks\[0\]\.url is http:\/\/ to cm\.example, not loopback/,
  },
  {
    name: 'an unknown failure policy',
    hooks: [{ name: 't', at: ['afterRun'], command: ['/bin/true'], onFailure: 'retry' }],
    error: /^hooks\[0\]\.onFailure must be fail or ignore, got "retry"$/,
  },
  {
    name: 'a timeout too long',
    hooks: [{ name: 't', at: ['afterRun'], command: ['/bin/true'], timeoutSeconds: 301 }],
    error: /^hooks\[0\]\.timeoutSeconds must be an integer from 1 to 300$/,
  },
];

describe('hooks: in the cluster configuration', () => {
  for (const c of BAD) {
    it(`refuses ${c.name} in one line naming the key`, () => {
      assert.throws(
        () => parseHooks(c.hooks),
        (err: unknown) => err instanceof RuleError && c.error.test(err.message) && !err.message.includes('\n'),
      );
    });
  }

  it('takes a command or a webhook at its points, fail by default, and says which run at a point', () => {
    const hooks = parseHooks([
      { name: 'ticket', at: ['beforeRun', 'afterRun'], command: ['/usr/local/bin/ticket', 'open'] },
      { name: 'cm', at: ['beforeNode'], urlEnv: 'CM_URL', onFailure: 'ignore', timeoutSeconds: 5 },
    ]);
    assert.deepEqual(hooks[0], {
      name: 'ticket',
      at: ['beforeRun', 'afterRun'],
      command: ['/usr/local/bin/ticket', 'open'],
      allowInsecure: false,
      timeoutSeconds: 60,
      onFailure: 'fail',
    });
    assert.deepEqual(hooks[1]?.url, { env: 'CM_URL' });
    assert.deepEqual(
      hooksAt(hooks, 'beforeNode').map((h) => h.name),
      ['cm'],
    );
    assert.deepEqual(hooksAt(hooks, 'beforeHop'), []);
  });
});
