import t from 'tap';
import { readConfig } from '../../infra/config.ts';

t.test('submission configuration: off unless SUBMISSION_PORT is set', async (t) => {
  t.same(readConfig({ HOST: '0.0.0.0' }).submission, {
    port: null,
    host: '0.0.0.0',
    maxMessageBytes: 15 * 1024 * 1024,
    tls: null,
  });
  t.same(
    readConfig({
      SUBMISSION_PORT: '587',
      SUBMISSION_HOST: '192.0.2.1',
      SUBMISSION_MAX_MESSAGE_BYTES: '1048576',
      SUBMISSION_TLS_KEY: '/etc/mail/key.pem',
      SUBMISSION_TLS_CERT: '/etc/mail/cert.pem',
    }).submission,
    {
      port: 587,
      host: '192.0.2.1',
      maxMessageBytes: 1048576,
      tls: { keyFile: '/etc/mail/key.pem', certFile: '/etc/mail/cert.pem' },
    },
  );
});

t.test('submission configuration: a typo stops the start', async (t) => {
  t.throws(() => readConfig({ SUBMISSION_PORT: '587x' }), /SUBMISSION_PORT must be a TCP port/);
  t.throws(() => readConfig({ SUBMISSION_MAX_MESSAGE_BYTES: '0' }), /SUBMISSION_MAX_MESSAGE_BYTES must be a positive/);
  t.throws(
    () => readConfig({ SUBMISSION_TLS_KEY: '/k.pem' }),
    /SUBMISSION_TLS_KEY and SUBMISSION_TLS_CERT go together/,
  );
});
