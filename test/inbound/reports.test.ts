import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { fieldGroups, parseDeliveryStatus, typedAddress } from '../../domain/messages/reports.ts';
import { readReport } from '../../infra/inbound/reports.ts';
import { ROOT } from '../support/paths.ts';

const fixtures = path.join(ROOT, 'test/fixtures/reports');
const sample = (name: string) => readFile(path.join(fixtures, name));

t.test('a Postfix bounce: one failed recipient, the original from its returned headers', async (t) => {
  t.same(await readReport(await sample('postfix-bounce.eml')), {
    kind: 'delivery-status',
    reportingMta: 'mail.example.net',
    originalEnvelopeId: null,
    arrivalDate: '2026-11-24T09:12:38.000Z',
    original: {
      messageId: '0f6c1d2e-8b7a-4c55-9e21-3a4b5c6d7e8f@sender.example.com',
      from: 'receipts@sender.example.com',
      to: ['gone@example.net'],
      subject: 'Your receipt #4411',
    },
    recipients: [
      {
        finalRecipient: 'gone@example.net',
        originalRecipient: 'gone@example.net',
        action: 'failed',
        status: '5.1.1',
        statusClass: 'permanent',
        diagnostic: '550 5.1.1 <gone@example.net>: Recipient address rejected: User unknown in virtual mailbox table',
        remoteMta: 'mx1.example.net',
        lastAttemptDate: null,
        willRetryUntil: null,
      },
    ],
  });
});

t.test('an Exchange report: base64 status part, a failure and a delay, the whole original returned', async (t) => {
  const report = await readReport(await sample('exchange-mixed.eml'));
  t.match(report, {
    kind: 'delivery-status',
    reportingMta: 'EX-MBX-07.corp.example.org',
    originalEnvelopeId: 'msg_01JDX9ZZ',
    original: {
      messageId: 'inv-2026-11-4471@sender.example.com',
      from: 'billing@sender.example.com',
      to: ['full@corp.example.org', 'Slow@Corp.Example.org'],
      subject: 'Invoice November',
    },
  });
  t.same(
    report?.kind === 'delivery-status' &&
      report.recipients.map((r) => [r.finalRecipient, r.originalRecipient, r.action, r.status, r.statusClass]),
    [
      ['full@corp.example.org', null, 'failed', '5.2.2', 'permanent'],
      ['slow@corp.example.org', 'Slow@Corp.Example.org', 'delayed', '4.4.7', 'transient'],
    ],
  );
  t.equal(report?.kind === 'delivery-status' && report.recipients[1]?.willRetryUntil, '2026-11-25T18:01:02.000Z');
  t.match(report?.kind === 'delivery-status' && report.recipients[0]?.diagnostic, /^554 5\.2\.2 mailbox full/);
});

t.test('a UTF-8 DSN (RFC 6533): global parts, a UTF-8 address, a status with a comment', async (t) => {
  const report = await readReport(await sample('global-dsn.eml'));
  t.match(report, {
    kind: 'delivery-status',
    reportingMta: 'mx.example.jp',
    original: { messageId: 'jp-1@sender.example.com', subject: 'お知らせ' },
    recipients: [{ finalRecipient: '山田@例え.jp', action: 'failed', status: '5.1.1', statusClass: 'permanent' }],
  });
});

t.test('an ARF abuse report: a complaint, its recipient and the original message id', async (t) => {
  t.same(await readReport(await sample('arf-abuse.eml')), {
    kind: 'feedback',
    feedbackType: 'abuse',
    complaint: true,
    userAgent: 'MailboxProviderFBL/2.1',
    version: '1',
    originalMailFrom: 'bounce+msg_01JDXB4K@bounces.sender.example.com',
    recipients: ['reader@mailbox-provider.example'],
    arrivalDate: '2026-11-24T10:58:40.000Z',
    sourceIp: '198.51.100.20',
    reportingMta: 'fbl.mailbox-provider.example',
    reportedDomains: ['sender.example.com'],
    reportedUris: ['https://sender.example.com/sale'],
    authenticationResults:
      'mx.mailbox-provider.example; dkim=pass header.d=sender.example.com; spf=pass smtp.mailfrom=bounces.sender.example.com',
    incidents: 1,
    original: {
      messageId: 'sale-2026-04@sender.example.com',
      from: 'news@sender.example.com',
      to: ['reader@mailbox-provider.example'],
      subject: 'Spring sale starts now',
    },
  });
});

t.test('a redacted ARF report: no Original-Rcpt-To, recipients from the returned To', async (t) => {
  t.match(await readReport(await sample('arf-redacted.eml')), {
    kind: 'feedback',
    feedbackType: 'abuse',
    complaint: true,
    originalMailFrom: null,
    recipients: ['redacted@jmrp.example'],
    arrivalDate: '2026-11-24T20:20:00.000Z',
    original: { messageId: 'digest-48@sender.example.com', subject: 'Weekly digest' },
  });
});

t.test('mail that only talks about a bounce is not a report', async (t) => {
  t.equal(await readReport(await sample('not-a-report.eml')), null);
});

t.test('field blocks: folding, blank lines between groups, stray lines skipped', async (t) => {
  t.same(fieldGroups('A: 1\r\nB: two\r\n  lines\r\nnot a field\r\n\r\n\r\nC:3\n'), [
    [
      { name: 'a', value: '1' },
      { name: 'b', value: 'two lines' },
    ],
    [{ name: 'c', value: '3' }],
  ]);
  t.equal(typedAddress('rfc822; <a@b.example>'), 'a@b.example');
  t.equal(typedAddress('utf-8; \\x{5C71}\\x{7530}@example.jp'), '山田@example.jp');
  t.equal(typedAddress('rfc822;'), null);
});

t.test('a recipient without Status takes its code from the diagnostic, else its class from the action', async (t) => {
  const original = { messageId: 'm@x', from: null, to: [], subject: null };
  const report = parseDeliveryStatus(
    'Reporting-MTA: dns; a.example\n\nFinal-Recipient: rfc822; x@y\nAction: failed\nDiagnostic-Code: smtp; 550 5.7.1 blocked\n\nFinal-Recipient: rfc822; z@y\nAction: delayed\nDiagnostic-Code: smtp; 421 try later\n\nFinal-Recipient: rfc822; w@y\nAction: Delivered (relayed)\n',
    original,
  );
  t.same(
    report.recipients.map((r) => [r.finalRecipient, r.action, r.status, r.statusClass]),
    [
      ['x@y', 'failed', '5.7.1', 'permanent'],
      ['z@y', 'delayed', null, 'transient'],
      ['w@y', 'delivered', null, 'success'],
    ],
  );
});
