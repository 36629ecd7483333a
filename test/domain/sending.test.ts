import t from 'tap';
import { checkCustomHeaders, isReservedHeader } from '../../domain/sending/headers.ts';
import { DELIVERY_LIFETIME_MS, nextRetry } from '../../domain/sending/retry.ts';
import { enhancedCodeOf, statusOfReply } from '../../domain/sending/smtp-reply.ts';

t.test('the headers the message fields, the pipeline and MTAs own are reserved, in any case', async (t) => {
  for (const name of [
    'From',
    'to',
    'CC',
    'Bcc',
    'Subject',
    'Message-ID',
    'Date',
    'DKIM-Signature',
    'Return-Path',
    'MIME-Version',
    'Received',
    'Reply-To',
    'In-Reply-To',
    'References',
    'Sender',
    'List-Unsubscribe',
    'list-unsubscribe-post',
    'Authentication-Results',
    'Received-SPF',
    'Delivered-To',
  ]) {
    t.ok(isReservedHeader(name), name);
  }
  for (const name of [
    'Content-Type',
    'content-transfer-encoding',
    'Content-Disposition',
    'Content-ID',
    'Resent-From',
    'ARC-Seal',
    'ARC-Message-Signature',
  ]) {
    t.ok(isReservedHeader(name), `${name} (a reserved family)`);
  }
  for (const name of [
    'X-Campaign',
    'X-Entity-Ref-ID',
    'Auto-Submitted',
    'Precedence',
    'List-Id',
    'Feedback-ID',
    'Contents',
  ]) {
    t.notOk(isReservedHeader(name), `${name} is the caller's`);
  }
});

t.test('checkCustomHeaders names the first problem', async (t) => {
  t.equal(checkCustomHeaders({}), null);
  t.equal(checkCustomHeaders({ 'X-Campaign': 'spring', 'X-Entity-Ref-ID': 'a1' }), null);
  t.same(checkCustomHeaders({ 'X-Ok': 'a', 'message-id': '<x@y>' }), { reason: 'reserved_header', name: 'message-id' });
  t.same(checkCustomHeaders({ 'X Space': 'a' }), { reason: 'invalid_name', name: 'X Space' });
  t.same(checkCustomHeaders({ 'X-Colon:': 'a' }), { reason: 'invalid_name', name: 'X-Colon:' });
  t.same(checkCustomHeaders({ 'X-Ünicode': 'a' }), { reason: 'invalid_name', name: 'X-Ünicode' });
  t.same(checkCustomHeaders({ 'X-Inject': 'a\r\nBcc: victim@example.com' }), {
    reason: 'invalid_value',
    name: 'X-Inject',
  });
  t.same(checkCustomHeaders({ 'X-Nul': 'a\0b' }), { reason: 'invalid_value', name: 'X-Nul' });
  t.equal(
    checkCustomHeaders({ 'X-Value': 'naïve – ok, will be encoded' }),
    null,
    'non-ASCII values are encoded by the composer',
  );
});

t.test('retries follow 1, 5, 15, 30 min, 1 h, 2 h, then every 4 h, counted from each failure', async (t) => {
  const acceptedAt = '2026-11-22T00:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(acceptedAt) + ms).toISOString();
  const min = 60_000;
  const expected = [1, 5, 15, 30, 60, 120, 240, 240].map((m) => m * min);
  let failedAt = acceptedAt;
  for (const [i, delay] of expected.entries()) {
    const decision = nextRetry({ acceptedAt, failedAttempts: i + 1, failedAt });
    t.same(
      decision,
      { kind: 'retry', at: new Date(Date.parse(failedAt) + delay).toISOString() },
      `after failure ${i + 1}`,
    );
    // the attempt itself took 30 s: the next delay counts from its failure
    failedAt = new Date(Date.parse(failedAt) + delay + 30_000).toISOString();
  }
  t.same(nextRetry({ acceptedAt, failedAttempts: 30, failedAt: at(10 * 60 * min) }), {
    kind: 'retry',
    at: at(14 * 60 * min),
  });
});

t.test('nothing is tried past 72 h: the last retry moves to the deadline, a failure there expires', async (t) => {
  const acceptedAt = '2026-11-22T00:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(acceptedAt) + ms).toISOString();
  const hour = 3_600_000;
  t.equal(DELIVERY_LIFETIME_MS, 72 * hour);
  t.same(nextRetry({ acceptedAt, failedAttempts: 20, failedAt: at(70 * hour) }), { kind: 'retry', at: at(72 * hour) });
  t.same(nextRetry({ acceptedAt, failedAttempts: 21, failedAt: at(72 * hour) }), { kind: 'expire' });
  t.same(nextRetry({ acceptedAt, failedAttempts: 21, failedAt: at(72 * hour + 5_000) }), { kind: 'expire' });
  t.same(
    nextRetry({ acceptedAt, failedAttempts: 1, failedAt: at(72 * hour - 1) }),
    { kind: 'retry', at: at(72 * hour) },
    'a message delayed by other means still gets its last try',
  );
  t.throws(() => nextRetry({ acceptedAt, failedAttempts: 0, failedAt: acceptedAt }), RangeError);
  t.throws(() => nextRetry({ acceptedAt: 'yesterday', failedAttempts: 1, failedAt: acceptedAt }), RangeError);
});

t.test('reply codes: 2xx delivered, 4xx deferred, 5xx bounced; anything else deferred', async (t) => {
  t.equal(statusOfReply(250), 'delivered');
  t.equal(statusOfReply(251), 'delivered');
  t.equal(statusOfReply(421), 'deferred');
  t.equal(statusOfReply(452), 'deferred');
  t.equal(statusOfReply(550), 'bounced');
  t.equal(statusOfReply(554), 'bounced');
  t.equal(statusOfReply(354), 'deferred');
  t.equal(statusOfReply(999), 'deferred');
});

t.test('the enhanced status code is read from the reply, when its class agrees with the code', async (t) => {
  t.equal(enhancedCodeOf('550 5.1.1 <a@example.com>: Recipient address rejected'), '5.1.1');
  t.equal(enhancedCodeOf('250 2.0.0 Ok: queued as 4BCD'), '2.0.0');
  t.equal(enhancedCodeOf('451-4.7.1 Greylisted\r\n451 4.7.1 try later'), '4.7.1');
  t.equal(enhancedCodeOf('556 5.1.10 null MX'), '5.1.10');
  t.equal(enhancedCodeOf('550 5.007.001 padded'), '5.7.1');
  t.equal(enhancedCodeOf('250 Ok'), null);
  t.equal(enhancedCodeOf('550 4.1.1 contradicts its code'), null);
  t.equal(enhancedCodeOf('550 5.1.1x not a code'), null);
  t.equal(enhancedCodeOf(''), null);
});
