import t from 'tap';
import { emailsProjector } from '../../projections/emails/projector.ts';
import type { ProjectedEvent } from '../../projections/projector.ts';
import { startTestApp } from '../support/app.ts';
import { projectorSchemas } from '../support/projector-schemas.ts';

t.test('a batch of several messages applied in turns does what applying its events one at a time does', async (t) => {
  const h = await startTestApp(t);
  const { pool } = h.system.database;
  const p = emailsProjector;
  let position = 0;
  const at = (n: number) => new Date(Date.UTC(2025, 0, 1, 0, n, 0)).toISOString();
  const from = { addressId: 'addr_1', domainId: 'dom_1', email: 'a@turns.test' };
  const event = (type: string, emailId: string, data: Record<string, unknown>): ProjectedEvent =>
    ({
      type,
      data: { emailId, ...data },
      streamId: `ws-w1.email-${emailId}`,
      revision: 0,
      position: ++position,
      recordedAt: new Date(),
      metadata: { workspaceId: 'w1' },
    }) as ProjectedEvent;
  const accepted = (
    emailId: string,
    recipients: [string, 'queued' | 'suppressed'][],
    scheduledAt: string | null = null,
  ) =>
    event('EmailAccepted', emailId, {
      messageId: `${emailId}@turns.test`,
      from: { ...from, name: null },
      replyTo: [],
      subject: `Subject ${emailId}`,
      recipients: recipients.map(([email, status]) => ({
        email,
        kind: 'to',
        status,
        reason: status === 'suppressed' ? 'manual' : null,
      })),
      stream: 'transactional',
      tags: [],
      raw: { sha256: 'f'.repeat(64), size: 100 },
      template: null,
      signatureId: null,
      inReplyTo: null,
      scheduledAt,
      mode: 'live',
      source: 'api',
      acceptedAt: at(position),
    });
  const perRecipient = (emailId: string, recipient: string) => ({
    messageId: `${emailId}@turns.test`,
    from,
    stream: 'transactional',
    recipient,
    at: at(position),
  });
  const answer = (type: string, emailId: string, recipient: string, n: number, extra: Record<string, unknown> = {}) =>
    event(type, emailId, {
      ...perRecipient(emailId, recipient),
      attempt: n,
      code: type === 'EmailRecipientDelivered' ? 250 : type === 'EmailRecipientDeferred' ? 451 : 550,
      enhancedCode: null,
      response: `${type} ${n}`,
      mx: 'mx.turns.test',
      tls: true,
      ...extra,
    });
  const started = (emailId: string) => event('EmailSendingStarted', emailId, { startedAt: at(position) });
  const log = [
    accepted('em_1', [
      ['one@x.test', 'queued'],
      ['two@x.test', 'queued'],
    ]),
    accepted('em_2', [['three@x.test', 'queued']]),
    started('em_1'),
    accepted('em_3', [['four@x.test', 'queued']], at(90)),
    started('em_2'),
    answer('EmailRecipientDelivered', 'em_1', 'ONE@x.test', 1),
    answer('EmailRecipientDeferred', 'em_2', 'three@x.test', 1, { nextAttemptAt: at(30) }),
    event('EmailCancelled', 'em_3', { cancelledAt: at(position) }),
    answer('EmailRecipientBounced', 'em_1', 'two@x.test', 1, { bounce: 'hard' }),
    accepted('em_4', [['five@x.test', 'suppressed']]),
    event('EmailRecipientDelayReported', 'em_2', {
      ...perRecipient('em_2', 'three@x.test'),
      reportId: 'r1',
      status: '4.4.1',
      diagnostic: null,
      reportingMta: null,
      willRetryUntil: null,
    }),
    answer('EmailRecipientDelivered', 'em_2', 'three@x.test', 2),
    event('EmailOpened', 'em_1', { ...perRecipient('em_1', ''), userAgent: 'UA' }),
    event('EmailRecipientComplained', 'em_1', { ...perRecipient('em_1', 'one@x.test'), feedbackType: 'abuse' }),
    event('EmailLinkClicked', 'em_2', {
      ...perRecipient('em_2', 'three@x.test'),
      userAgent: null,
      url: 'https://x.test',
    }),
  ];
  const { tables, fresh, inSchema } = projectorSchemas(h.system.database, p);

  await fresh('one_by_one');
  await inSchema('one_by_one', async (trx) => {
    for (const e of log) await p.apply(trx, e);
  });
  await fresh('in_turns');
  // Every event at once, and then again: a batch handed over twice after a crash changes nothing.
  await inSchema('in_turns', (trx) => p.applyBatch(trx, log));
  await inSchema('in_turns', (trx) => p.applyBatch(trx, log));

  const expected = await tables('one_by_one');
  t.strictSame(await tables('in_turns'), expected);
  const statuses = (await pool.query('SELECT id, status FROM one_by_one.emails ORDER BY id')).rows;
  t.strictSame(
    statuses.map((r) => [r.id, r.status]),
    [
      ['em_1', 'partially_bounced'],
      ['em_2', 'delivered'],
      ['em_3', 'cancelled'],
      ['em_4', 'failed'],
    ],
    'the messages end where their events leave them',
  );
  t.equal(expected.email_history!.length, log.length, 'one history row per event');
  await pool.query('DROP SCHEMA one_by_one CASCADE; DROP SCHEMA in_turns CASCADE');
});
