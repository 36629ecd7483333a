import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  to: string[];
  subject: string;
  text: string;
}

/**
 * An SMTP server on loopback that keeps the mail it accepts. `accept(n)` says whether the n-th
 * message offered is taken; a refused one is answered 451 (try again later) and not kept.
 */
export async function startSmtpServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  accept: (n: number) => boolean = () => true,
) {
  const mails: Mail[] = [];
  let offered = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      simpleParser(stream).then((m) => {
        if (!smtp.accept(++offered))
          return callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
        mails.push({
          to: session.envelope.rcptTo.map((r) => r.address).sort(),
          subject: m.subject ?? '',
          text: m.text ?? '',
        });
        callback();
      }, callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const smtp = {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    mails,
    accept,
    /** Messages offered so far, refused ones included. */
    offered: () => offered,
  };
  return smtp;
}
