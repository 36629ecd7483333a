import t from 'tap';
import { readConfig } from '../../infra/config.ts';

t.test('receiving configuration: defaults', async (t) => {
  const config = readConfig({ HOST: '0.0.0.0' });
  t.same(config.inbound, { port: 2525, host: '0.0.0.0', maxMessageBytes: 50 * 1024 * 1024 });
  t.equal(config.blobS3Url, undefined);
  t.equal(config.spamFilterUrl, undefined);
});

t.test('receiving configuration: set', async (t) => {
  const config = readConfig({
    SMTP_PORT: '25',
    SMTP_HOST: '192.0.2.1',
    SMTP_MAX_MESSAGE_BYTES: '1048576',
    BLOB_S3_URL: 'https://k:s@s3.example.com/mail',
    SPAM_FILTER_URL: 'http://127.0.0.1:11333',
  });
  t.same(config.inbound, { port: 25, host: '192.0.2.1', maxMessageBytes: 1048576 });
  t.equal(config.blobS3Url, 'https://k:s@s3.example.com/mail');
  t.equal(config.spamFilterUrl, 'http://127.0.0.1:11333');
});

t.test('receiving configuration: a typo stops the start', async (t) => {
  t.throws(() => readConfig({ SMTP_PORT: '25x' }), /SMTP_PORT must be a TCP port/);
  t.throws(() => readConfig({ SMTP_PORT: '70000' }), /SMTP_PORT must be a TCP port/);
  t.throws(() => readConfig({ SMTP_MAX_MESSAGE_BYTES: '0' }), /SMTP_MAX_MESSAGE_BYTES must be a positive integer/);
  t.throws(() => readConfig({ SMTP_MAX_MESSAGE_BYTES: '10MB' }), /SMTP_MAX_MESSAGE_BYTES must be a positive integer/);
});

t.test('PUBLIC_URL: https only, default https://MAIL_HOSTNAME', async (t) => {
  t.equal(readConfig({}).publicUrl, 'https://localhost');
  t.equal(readConfig({ MAIL_HOSTNAME: 'Mail.Example.com' }).publicUrl, 'https://mail.example.com');
  t.equal(readConfig({ PUBLIC_URL: 'https://mail.example.com/' }).publicUrl, 'https://mail.example.com');
  t.throws(() => readConfig({ PUBLIC_URL: 'http://mail.example.com' }), /PUBLIC_URL must be an https URL/);
  t.throws(() => readConfig({ PUBLIC_URL: 'mail.example.com' }), /PUBLIC_URL must be an https URL/);
});

t.test('TEMP_MAIL_DOMAIN: a domain under a public suffix, lower case, punycode', async (t) => {
  t.equal(readConfig({}).tempMailDomain, undefined);
  t.equal(readConfig({ TEMP_MAIL_DOMAIN: 'Temp.Example.com.' }).tempMailDomain, 'temp.example.com');
  t.equal(readConfig({ TEMP_MAIL_DOMAIN: 'tëmp.example.com' }).tempMailDomain, 'xn--tmp-jma.example.com');
  t.throws(() => readConfig({ TEMP_MAIL_DOMAIN: 'localhost' }), /TEMP_MAIL_DOMAIN must be a domain name/);
  t.throws(() => readConfig({ TEMP_MAIL_DOMAIN: 'temp.invalid-suffix-zz' }), /TEMP_MAIL_DOMAIN must be a domain name/);
});
