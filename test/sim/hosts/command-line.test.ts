import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCommandLine, UNSUPPORTED, type SimpleCommand } from '../../../sim/hosts/command-line.js';
import { CommandFaults, validateFault } from '../../../sim/hosts/faults.js';

const cmd = (argv: string[], env: Record<string, string> = {}, sudo = false): SimpleCommand => ({ argv, env, sudo });

describe('parseCommandLine', () => {
  const ok: [string, string, [SimpleCommand, boolean][]][] = [
    ['plain words', 'kubeadm version -o short', [[cmd(['kubeadm', 'version', '-o', 'short']), false]]],
    ['extra blanks and tabs', '  echo\t a   b ', [[cmd(['echo', 'a', 'b']), false]]],
    ['single quotes keep everything', "echo 'a  b' '$HOME' 'x\\y'", [[cmd(['echo', 'a  b', '$HOME', 'x\\y']), false]]],
    ['double quotes with escapes', 'echo "a \\"b\\" \\\\ c" "x\\y"', [[cmd(['echo', 'a "b" \\ c', 'x\\y']), false]]],
    ['backslash outside quotes', 'echo a\\ b \\;', [[cmd(['echo', 'a b', ';']), false]]],
    ['adjacent quoted parts join', `echo 'a'"b"c`, [[cmd(['echo', 'abc']), false]]],
    ['empty quoted argument', `echo '' ""`, [[cmd(['echo', '', '']), false]]],
    ['quoted apt version glob', "apt-get install -y 'kubeadm=1.33.7-*'", [[cmd(['apt-get', 'install', '-y', 'kubeadm=1.33.7-*']), false]]],
    ['sudo', 'sudo systemctl restart kubelet', [[cmd(['systemctl', 'restart', 'kubelet'], {}, true), false]]],
    ['sudo -n', 'sudo -n reboot', [[cmd(['reboot'], {}, true), false]]],
    [
      'env before sudo and after',
      'A=1 sudo -n DEBIAN_FRONTEND=noninteractive apt-get update',
      [[cmd(['apt-get', 'update'], { A: '1', DEBIAN_FRONTEND: 'noninteractive' }, true), false]],
    ],
    ['quoted assignment value', "X='a b' echo", [[cmd(['echo'], { X: 'a b' }), false]]],
    ['= after a quote is not an assignment', `"A"=b echo`, [[cmd(['A=b', 'echo']), false]]],
    [
      '= in a later argument is an argument',
      'apt-get install kubeadm=1.33.7-1.1',
      [[cmd(['apt-get', 'install', 'kubeadm=1.33.7-1.1']), false]],
    ],
    [
      '&& chain',
      'true && echo ok',
      [
        [cmd(['true']), false],
        [cmd(['echo', 'ok']), true],
      ],
    ],
    [
      '; sequence and trailing ;',
      'false; echo x;',
      [
        [cmd(['false']), false],
        [cmd(['echo', 'x']), false],
      ],
    ],
    [
      'mixed',
      'a && b; c && d',
      [
        [cmd(['a']), false],
        [cmd(['b']), true],
        [cmd(['c']), false],
        [cmd(['d']), true],
      ],
    ],
    [
      '&& without spaces',
      'a&&b',
      [
        [cmd(['a']), false],
        [cmd(['b']), true],
      ],
    ],
    [
      'newline separates',
      'a\nb',
      [
        [cmd(['a']), false],
        [cmd(['b']), false],
      ],
    ],
    ['line continuation', 'echo a \\\nb', [[cmd(['echo', 'a', 'b']), false]]],
    ['blank line', '   ', []],
  ];
  for (const [name, line, expected] of ok) {
    it(name, () => {
      const parsed = parseCommandLine(line);
      assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
      assert.deepEqual(
        parsed.steps.map((s) => [s.command, s.onlyIfSucceeded]),
        expected,
      );
    });
  }

  const refused: [string, string, RegExp][] = [
    ['pipe', 'apt-cache madison kubeadm | head -1', /pipe/],
    ['||', 'false || true', /'\|\|'/],
    ['output redirection', 'echo x > /tmp/x', /redirection/],
    ['input redirection', 'cat < /etc/os-release', /redirection/],
    ['command substitution', 'echo $(hostname)', /\$\(\.\.\.\)/],
    ['variable expansion', 'echo $HOME', /expansion/],
    ['expansion inside double quotes', 'echo "$HOME"', /expansion/],
    ['backticks', 'echo `hostname`', /backticks/],
    ['backticks inside double quotes', 'echo "`hostname`"', /backticks/],
    ['unquoted glob', 'apt-get install -y kubeadm=1.33.7-*', /glob '\*'/],
    ['unquoted ?', 'ls a?', /glob '\?'/],
    ['unquoted [', 'ls a[12]', /glob '\['/],
    ['background', 'sleep 1 &', /background/],
    ['subshell', '(true)', /subshell/],
    ['brace', 'echo {a,b}', /brace/],
    ['comment', 'true # x', /comment/],
    ['tilde', 'cat ~/x', /tilde/],
    ['unterminated single quote', "echo 'x", /unterminated single quote/],
    ['unterminated double quote', 'echo "x', /unterminated double quote/],
    ['&& with nothing after', 'true &&', /syntax error/],
    ['&& with nothing before', '&& true', /syntax error/],
    [';;', 'a;; b', /';;'/],
    ['sudo with other options', 'sudo -u root true', /sudo option -u/],
  ];
  for (const [name, line, detail] of refused) {
    it(`refuses ${name}`, () => {
      const parsed = parseCommandLine(line);
      assert.equal(parsed.ok, false);
      if (parsed.ok) return;
      assert.ok(parsed.error.startsWith(UNSUPPORTED), parsed.error);
      assert.match(parsed.error, detail);
    });
  }
});

describe('a command fault is read as the host reads a command line', () => {
  /** The argv the host runs for `line` (its one step), as runStep hands it to the faults. */
  const argvOf = (line: string) => {
    const parsed = parseCommandLine(line);
    assert.ok(parsed.ok && parsed.steps.length === 1, line);
    return parsed.steps[0]!.command.argv;
  };

  it('fires when written as commands.log shows the command: sudo -n, VAR=value and quotes as the product sends them', () => {
    const logged = [
      'sudo -n apt-mark showhold',
      "sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y --allow-change-held-packages 'kubeadm=1.33.7-1.1'",
    ];
    for (const line of logged) {
      const faults = new CommandFaults();
      faults.add({ kind: 'fail', command: line, exitCode: 100 });
      assert.equal(faults.take(argvOf('sudo -n apt-get update')).fail, undefined, `${line}: another command is untouched`);
      assert.equal(faults.take(argvOf(line)).fail?.exitCode, 100, `${line}: fires on the command it was copied from`);
      assert.equal(faults.take(argvOf(line)).fail, undefined, `${line}: once`);
    }
    // Copied as a prefix of the logged line, it still matches longer commands, as a bare prefix does.
    const prefix = new CommandFaults();
    prefix.add({ kind: 'slow', command: 'sudo -n DEBIAN_FRONTEND=noninteractive apt-get install', ms: 5 });
    assert.equal(prefix.take(argvOf('sudo -n DEBIAN_FRONTEND=noninteractive apt-get install -y kubelet=1.33.7-1.1')).extraDelayMs, 5);
  });

  it('refuses a fault that names several commands or none, in one line', () => {
    assert.throws(
      () => validateFault({ kind: 'fail', command: 'sudo -n systemctl daemon-reload && sudo -n systemctl restart kubelet' }),
      /^Error: sim: fault fail: command "sudo -n systemctl daemon-reload && sudo -n systemctl restart kubelet" is 2 commands; a fault matches one/,
    );
    assert.throws(() => validateFault({ kind: 'hang', command: 'sudo -n' }), /^Error: sim: fault hang: command prefix is empty$/);
    assert.throws(() => validateFault({ kind: 'hang', command: '  ' }), /command prefix is empty/);
  });
});
