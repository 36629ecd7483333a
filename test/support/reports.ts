/**
 * Reports as other mail systems send them back to a return path, composed by hand because
 * nodemailer builds no `multipart/report`: a Postfix-style DSN (RFC 3464) returning the sent
 * message's headers, and an ARF feedback report (RFC 5965) returning the whole message.
 */

/** The header block of a message as it arrived (up to its first blank line). */
export const headersOf = (raw: Buffer) =>
  raw
    .toString('latin1')
    .split(/\r?\n\r?\n/, 1)[0]!
    .replace(/\r?\n/g, '\r\n');

export interface DsnRecipient {
  recipient: string;
  action: 'failed' | 'delayed' | 'delivered';
  status: string;
  diagnostic: string;
  willRetryUntil?: string;
}

/** A DSN as Postfix writes one: the notice, the delivery-status part, the returned headers. */
export function postfixDsn(o: { returnPath: string; recipients: DsnRecipient[]; returnedHeaders: string }): string {
  const boundary = '8C1E21A0F2.1795943560/relay.dest.test';
  const blocks = o.recipients.map((r) =>
    [
      `Final-Recipient: rfc822; ${r.recipient}`,
      `Original-Recipient: rfc822;${r.recipient}`,
      `Action: ${r.action}`,
      `Status: ${r.status}`,
      'Remote-MTA: dns; mx2.dest.test',
      `Diagnostic-Code: smtp; ${r.diagnostic}`,
      ...(r.willRetryUntil ? [`Will-Retry-Until: ${r.willRetryUntil}`] : []),
    ].join('\r\n'),
  );
  return [
    'Date: Thu, 26 Nov 2026 09:12:40 +0000 (UTC)',
    'From: MAILER-DAEMON@relay.dest.test (Mail Delivery System)',
    'Subject: Undelivered Mail Returned to Sender',
    `To: ${o.returnPath}`,
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status;\r\n\tboundary="${boundary}"`,
    'Content-Transfer-Encoding: 8bit',
    `Message-Id: <20261126091240.${Math.random().toString(36).slice(2)}@relay.dest.test>`,
    '',
    'This is a MIME-encapsulated message.',
    '',
    `--${boundary}`,
    'Content-Description: Notification',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'This is the mail system at host relay.dest.test.',
    '',
    "I'm sorry to have to inform you that your message could not",
    'be delivered to one or more recipients.',
    '',
    `--${boundary}`,
    'Content-Description: Delivery report',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.dest.test',
    `X-Postfix-Sender: rfc822; ${o.returnPath}`,
    'Arrival-Date: Thu, 26 Nov 2026 09:12:38 +0000 (UTC)',
    '',
    blocks.join('\r\n\r\n'),
    '',
    `--${boundary}`,
    'Content-Description: Undelivered Message Headers',
    'Content-Type: text/rfc822-headers',
    '',
    o.returnedHeaders,
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

/** An ARF report as a mailbox provider's feedback loop sends one: the whole original returned. */
export function arfReport(o: {
  returnPath: string;
  recipient: string;
  original: string;
  feedbackType?: string;
}): string {
  const boundary = 'arf-boundary-77812';
  return [
    'From: feedback-loop@isp.test',
    `To: ${o.returnPath}`,
    'Subject: FW: complaint',
    'Date: Thu, 26 Nov 2026 12:30:00 +0000',
    `Message-ID: <fbl-${Math.random().toString(36).slice(2)}@isp.test>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset="US-ASCII"',
    '',
    'This is an email abuse report for an email message received from IP 127.0.0.1.',
    '',
    `--${boundary}`,
    'Content-Type: message/feedback-report',
    '',
    `Feedback-Type: ${o.feedbackType ?? 'abuse'}`,
    'User-Agent: ISP-FBL/2.1',
    'Version: 1',
    `Original-Mail-From: <${o.returnPath}>`,
    `Original-Rcpt-To: <${o.recipient}>`,
    'Arrival-Date: Thu, 26 Nov 2026 12:20:00 +0000',
    'Source-IP: 127.0.0.1',
    'Reported-Domain: sender.test',
    '',
    `--${boundary}`,
    'Content-Type: message/rfc822',
    'Content-Disposition: inline',
    '',
    o.original.replace(/\r?\n/g, '\r\n'),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
