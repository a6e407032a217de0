// The cluster configuration's `nodes` names and its `pools` and `provisioning` keys (blue/green): what
// the loader accepts, and the one-line error for each kind of mistake. No cluster needed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { msToNumber } from '@temporalio/common/lib/time.js';
import { labelsText, parseClusterConfig, parsePoolSelector, PROVISIONING_TIMEOUT } from '../../activities/cluster-config.js';
import { fillPlaceholders } from '../../activities/provisioning.js';
import { PROFILE_OF } from '../../workflows/activity-options.js';

const BASE = 'name: lab\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
const parse = (extra: string) => parseClusterConfig(`${BASE}${extra}`, 'lab.yaml');
const refuse = (extra: string, message: RegExp) =>
  assert.throws(
    () => parse(extra),
    (err: Error & { type?: string }) => {
      assert.equal(err.type, 'ClusterConfigInvalid');
      assert.match(err.message, message);
      assert.ok(!err.message.includes('\n'), 'one line');
      return true;
    },
  );

describe('cluster configuration: nodes', () => {
  it('takes Node names as the API has them; refuses any other name in one line naming the entry', () => {
    assert.deepEqual(parse('nodes:\n  worker-1: {port: 2201}\n  ip-10-0-0-1.ec2.internal: {address: 10.0.0.1}\n').nodes, {
      'worker-1': { port: 2201 },
      'ip-10-0-0-1.ec2.internal': { address: '10.0.0.1' },
    });
    const exactly = (text: string) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
    const notANodeName = (shown: string) =>
      exactly(`lab.yaml: nodes: ${shown} is not a node name (lowercase letters, digits, '-' and '.', at most 253 characters)`);
    refuse('nodes:\n  ../worker-1: {port: 2201}\n', notANodeName('"../worker-1"'));
    refuse('nodes:\n  "worker-1\\nworker-2": {port: 2201}\n', notANodeName('"worker-1\\nworker-2"'));
    refuse('nodes:\n  Worker-1: {port: 2201}\n', notANodeName('"Worker-1"'));
    refuse('nodes:\n  worker..1: {port: 2201}\n', notANodeName('"worker..1"'));
    refuse(`nodes:\n  ${'a'.repeat(254)}: {port: 2201}\n`, /^lab\.yaml: nodes: "a{79} is not a node name/);
  });
});

describe('cluster configuration: pools', () => {
  it('absent: none; present: each pool its selector and the labels it gives a new node', () => {
    assert.equal(parse('').pools, undefined);
    assert.deepEqual(
      parse('pools:\n  blue: {selector: "skewless.io/pool=blue"}\n  green: {selector: "skewless.io/pool == green, tier=web"}\n').pools,
      {
        blue: { selector: 'skewless.io/pool=blue', labels: { 'skewless.io/pool': 'blue' } },
        green: { selector: 'skewless.io/pool == green, tier=web', labels: { 'skewless.io/pool': 'green', tier: 'web' } },
      },
    );
    assert.deepEqual(parsePoolSelector('node-role.kubernetes.io/worker='), { 'node-role.kubernetes.io/worker': '' });
    assert.equal(labelsText({ tier: 'web', 'skewless.io/pool': 'green' }), 'skewless.io/pool=green,tier=web');
  });

  it('refuses set-based or negated selectors, bad keys and values, bad pool names, unknown keys', () => {
    refuse(
      'pools: {blue: {selector: "pool in (blue)"}}\n',
      /^lab\.yaml: pools\.blue\.selector: "pool in \(blue\)" is not an equality term/,
    );
    refuse('pools: {blue: {selector: "pool!=green"}}\n', /pools\.blue\.selector: .* is not an equality term/);
    refuse('pools: {blue: {selector: "pool"}}\n', /is not an equality term/);
    refuse('pools: {blue: {selector: "pool=a,,b=c"}}\n', /must be comma-separated key=value terms/);
    refuse('pools: {blue: {selector: "-bad=x"}}\n', /"-bad" is not a label key/);
    refuse('pools: {blue: {selector: "pool=white space"}}\n', /is not an equality term|is not a label value/);
    refuse('pools: {blue: {selector: "pool=a,pool=b"}}\n', /pool is given two values/);
    refuse('pools: {Blue: {selector: "pool=blue"}}\n', /pools: "Blue" is not a pool name/);
    refuse('pools: {blue: {selector: "pool=blue", size: 4}}\n', /unknown key pools\.blue\.size \(known: selector\)/);
    refuse('pools: {blue: "pool=blue"}\n', /pools\.blue must be a mapping/);
    refuse('pools: {blue: {}}\n', /pools\.blue\.selector must be a non-empty string/);
  });
});

describe('cluster configuration: provisioning', () => {
  it('the simulation provider: loopback endpoint, token file, join timeout', () => {
    assert.deepEqual(parse('provisioning: {provider: simulation, endpoint: "http://127.0.0.1:4100", tokenFile: /t}\n').provisioning, {
      provider: 'simulation',
      endpoint: 'http://127.0.0.1:4100',
      tokenFile: '/t',
      joinTimeoutSeconds: PROVISIONING_TIMEOUT.join.default,
    });
  });

  it('the command provider: argv lists with placeholders, the timeouts', () => {
    const p = parse(
      'provisioning:\n  provider: command\n  create: [/usr/local/bin/mk, --name, "{node}", "--labels={labels}", "{version}", "{pool}"]\n  delete: [/usr/local/bin/rm-machine, "{node}"]\n  joinTimeoutSeconds: 900\n  commandTimeoutSeconds: 120\n',
    ).provisioning;
    assert.deepEqual(p, {
      provider: 'command',
      create: ['/usr/local/bin/mk', '--name', '{node}', '--labels={labels}', '{version}', '{pool}'],
      delete: ['/usr/local/bin/rm-machine', '{node}'],
      joinTimeoutSeconds: 900,
      commandTimeoutSeconds: 120,
    });
    // A value stays one word, whatever it holds: no shell ever reads it.
    assert.deepEqual(
      fillPlaceholders(p?.provider === 'command' ? p.create : [], {
        node: 'g-1',
        version: '1.34.2',
        pool: 'green',
        labels: 'a=b,c=d; rm -rf /',
      }),
      ['/usr/local/bin/mk', '--name', 'g-1', '--labels=a=b,c=d; rm -rf /', '1.34.2', 'green'],
    );
  });

  it('refuses each kind of mistake with one line naming the key', () => {
    refuse('provisioning: {provider: cloud}\n', /^lab\.yaml: provisioning\.provider must be simulation or command, got "cloud"/);
    refuse('provisioning: {}\n', /provisioning\.provider must be simulation or command, got null/);
    refuse('provisioning: {provider: cluster-api}\n', /cluster-api is not supported yet/);
    refuse(
      'provisioning: {provider: simulation, endpoint: "http://10.0.0.1:80", tokenFile: /t}\n',
      /provisioning\.endpoint must be http:\/\/127\.0\.0\.1:PORT/,
    );
    refuse(
      'provisioning: {provider: simulation, endpoint: "http://user:pw@127.0.0.1:80", tokenFile: /t}\n',
      /provisioning\.endpoint must be/,
    );
    refuse(
      'provisioning: {provider: simulation, endpoint: "http://127.0.0.1:80", tokenFile: t}\n',
      /provisioning\.tokenFile must be an absolute path/,
    );
    refuse(
      'provisioning: {provider: simulation, endpoint: "http://127.0.0.1:80", tokenFile: /t, create: [/x, "{node}"]}\n',
      /provisioning\.create is not for provider simulation/,
    );
    refuse(
      'provisioning: {provider: command, create: "/bin/mk {node}", delete: [/bin/rm, "{node}"]}\n',
      /provisioning\.create must be a list of 1 to 64 non-empty words/,
    );
    refuse(
      'provisioning: {provider: command, create: [mk, "{node}"], delete: [/bin/rm, "{node}"]}\n',
      /provisioning\.create\[0\] must be an absolute path/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{name}"], delete: [/bin/rm, "{node}"]}\n',
      /provisioning\.create: unknown placeholder \{name\}/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk], delete: [/bin/rm, "{node}"]}\n',
      /must each name the machine: a word with \{node\}/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{node}"], delete: [/bin/rm, "{node}", "{version}"]}\n',
      /provisioning\.delete may use \{node\} and \{pool\} only/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{node}"], delete: [/bin/rm, "{node}"], tokenFile: /t}\n',
      /provisioning\.tokenFile is not for provider command/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{node}"], delete: [/bin/rm, "{node}"], joinTimeoutSeconds: 0}\n',
      /provisioning\.joinTimeoutSeconds must be an integer from 1 to 3600/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{node}"], delete: [/bin/rm, "{node}"], commandTimeoutSeconds: 99999}\n',
      /provisioning\.commandTimeoutSeconds must be an integer from 1 to 1800/,
    );
    refuse(
      'provisioning: {provider: command, create: [/bin/mk, "{node}"], delete: [/bin/rm, "{node}"], retries: 3}\n',
      /unknown key provisioning\.retries \(known: provider, endpoint/,
    );
    refuse('provisioning: [command]\n', /provisioning must be a mapping/);
  });

  it('the longest join plus a command stays inside the provisioning profile', () => {
    const limit = msToNumber(PROFILE_OF.createPoolMachines.startToCloseTimeout ?? 0);
    assert.ok((PROVISIONING_TIMEOUT.join.max + PROVISIONING_TIMEOUT.command.max) * 1000 < limit);
    assert.ok(PROFILE_OF.createPoolMachines.heartbeatTimeout, 'heartbeated');
    assert.ok(PROFILE_OF.deletePoolMachines.retry?.nonRetryableErrorTypes?.includes('BlueGreenInvalid'));
    assert.ok(PROFILE_OF.planBlueGreen.retry?.nonRetryableErrorTypes?.includes('BlueGreenInvalid'));
  });
});
