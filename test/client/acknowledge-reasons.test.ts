// `--reason` of `skewless upgrade`: one TEXT for every acknowledgement, or NAME=TEXT per acknowledgement.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAcknowledgementReasons } from '../../client/acknowledge-flags.js';

const ACKED = ['removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews', 'cert-expiry:cp-1/apiserver', 'shop/web-pdb'];

describe('--reason per acknowledgement', () => {
  it('one plain reason covers every acknowledgement; NAME=TEXT gives one its own', () => {
    assert.deepEqual(parseAcknowledgementReasons([], ACKED), {});
    assert.deepEqual(parseAcknowledgementReasons(['certs renewed tonight'], ACKED), { reason: 'certs renewed tonight' });
    assert.deepEqual(
      parseAcknowledgementReasons(
        [
          'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews=ci-bot moves to v1 on Friday',
          'cert-expiry:cp-1/apiserver=renewed by the cron at 02:00',
          'shop/web-pdb=a=b is fine in a reason',
          'the rest: the owners agreed',
        ],
        ACKED,
      ),
      {
        reason: 'the rest: the owners agreed',
        reasons: {
          'removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews': 'ci-bot moves to v1 on Friday',
          'cert-expiry:cp-1/apiserver': 'renewed by the cron at 02:00',
          'shop/web-pdb': 'a=b is fine in a reason',
        },
      },
    );
    // An = inside free text is not a name: "x = y" has blanks.
    assert.deepEqual(parseAcknowledgementReasons(['load = low'], ACKED), { reason: 'load = low' });
  });

  it('a name not acknowledged, a name given twice, or two plain reasons is a usage error naming --reason', () => {
    const cases: [string[], RegExp][] = [
      [['repository:worker-1/1.34=mirror fixed'], /^--reason: repository:worker-1\/1\.34 is not acknowledged by this command/],
      [['shop/web-pdb=one', 'shop/web-pdb=two'], /^--reason: shop\/web-pdb has two reasons$/],
      [['one', 'two'], /^--reason: one TEXT for every acknowledgement, or NAME=TEXT for each acknowledgement of its own$/],
    ];
    for (const [values, message] of cases)
      assert.throws(
        () => parseAcknowledgementReasons(values, ACKED),
        (err: Error) => message.test(err.message),
        values.join(' '),
      );
  });
});
