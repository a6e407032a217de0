import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canBeHostCommand, isHostCommandForm } from '../../rules/host-command-forms.js';

const words = (line: string) => line.split(' ');

describe('host command forms: what skewless sends to a host', () => {
  it('a command that starts like one skewless sends can match it; one that leaves every form cannot', () => {
    const table: [string, boolean][] = [
      ['apt-get', true], // the program alone: every apt-get skewless sends starts so
      ['apt-get install', true],
      ['apt-get install -y -q kubelet=1.34.2-1.1', true], // the form takes more words
      ['apt-get update -q -o Dir::Etc::SourceList=/etc/apt/sources.list.d/kubernetes.list', true],
      ['apt-get -q', false], // skewless puts the verb first
      ['apt-get remove kubelet', false],
      ['apt-get -y dist-upgrade', false], // only as a configured maintenance.command (below)
      ['apt-mark showhold', true],
      ['apt-mark showhold kubelet', false], // showhold is sent alone
      ['apt-cache -o Dir::Etc::SourceList=/tmp/x madison kubeadm', true],
      ['dnf install -y -q --disableexcludes=kubernetes', true],
      ['dnf upgrade', false],
      ['kubeadm upgrade', true],
      ['kubeadm upgrade apply v1.34.4 --yes', true],
      ['kubeadm version', false],
      ['kubeadm upgrade node --dry-run', true], // the form takes more words
      ['systemctl restart kubelet', true],
      ['systemctl restart containerd', false],
      ['systemctl daemon-reload now', false],
      ['/usr/sbin/reboot', true],
      ['/usr/local/bin/etcdctl --endpoints=https://127.0.0.1:2379 endpoint status', true],
      ['etcdutl snapshot save', false],
      ['hostname', false],
      ['echo stuck', false],
    ];
    for (const [command, can] of table) assert.equal(canBeHostCommand(words(command)), can, command);
  });

  it('a configured command (maintenance.command) counts, whole, with anything after it', () => {
    const configured = [['apt-get', '-y', 'dist-upgrade']];
    assert.equal(canBeHostCommand(words('apt-get -y dist-upgrade'), configured), true);
    assert.equal(canBeHostCommand(words('apt-get -y'), configured), true);
    assert.equal(canBeHostCommand(words('apt-get -y dist-upgrade -q'), configured), true);
    assert.equal(canBeHostCommand(words('apt-get -y upgrade'), configured), false);
  });

  it('a whole command is a form when it has the fixed words, and no more where the form ends there', () => {
    assert.equal(isHostCommandForm(['apt-mark', 'showhold']), true);
    assert.equal(isHostCommandForm(['apt-mark', 'showhold', 'kubelet']), false);
    assert.equal(isHostCommandForm(['apt-mark', 'hold', 'kubelet']), true);
    assert.equal(isHostCommandForm(['kubeadm', 'upgrade']), false);
    assert.equal(isHostCommandForm(['/sbin/reboot']), true);
    assert.equal(isHostCommandForm(['dnf', 'remove', 'kubelet']), false);
  });
});
