import { FileOutbox } from './file-outbox.ts';
import type { MailSender } from './port.ts';
import { SmtpSender } from './smtp.ts';

/**
 * SMTP when `smtpUrl` is set (config's `SMTP_URL`), otherwise the file outbox in `outboxDir`
 * (the embedded default passes `<DATA_DIR>/outbox`). Opening does not connect: SMTP connects on
 * the first send (or on `SmtpSender.verify()`), the outbox creates its directory on the first send.
 */
export function openMailSender(config: { smtpUrl?: string; outboxDir: string }): MailSender {
  if (config.smtpUrl) return new SmtpSender(config.smtpUrl);
  return new FileOutbox({ dir: config.outboxDir });
}
