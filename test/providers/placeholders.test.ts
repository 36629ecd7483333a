import t from 'tap';
import { retryAfterMs } from '../../infra/providers/http.ts';
import { convertPlaceholders, convertTemplate } from '../../infra/providers/placeholders.ts';

t.test('each dialect becomes {{name}}, the names declared once', async (t) => {
  t.same(convertPlaceholders('Hi {{{FIRST_NAME}}} and {{{ FIRST_NAME|friend }}}'), {
    text: 'Hi {{FIRST_NAME}} and {{FIRST_NAME}}',
    names: ['FIRST_NAME'],
    warnings: [],
  });
  t.same(
    convertPlaceholders('{{ user.first-name }} {{{raw}}}').text,
    '{{user_first_name}} {{raw}}',
    'dots and hyphens',
  );
  const brevo = convertPlaceholders('{{ params.CODE }} {{ contact.FIRSTNAME }} {{ params.X | default: "y" }}', (n) =>
    n.replace(/^params\./, '').replace(/^contact\./, 'contact_'),
  );
  t.same(brevo.names, ['CODE', 'contact_FIRSTNAME', 'X']);
});

t.test('helpers and names we cannot hold stay as text, with a warning each', async (t) => {
  const got = convertPlaceholders('{{#if vip}}{{name}}{{else}}x{{/if}}{{> partial}}{{!note}}{{9lives}}');
  t.equal(got.text, '{{#if vip}}{{name}}{{else}}x{{/if}}{{> partial}}{{!note}}{{9lives}}');
  t.same(got.names, ['name']);
  t.equal(got.warnings.length, 6);
});

t.test('a template: subject on one line, variables of both', async (t) => {
  const got = convertTemplate('Hello\r\n{{{NAME}}}', '<p>{{ PLAN }}</p>');
  t.same(got, { subject: 'Hello {{NAME}}', html: '<p>{{PLAN}}</p>', variables: ['NAME', 'PLAN'], warnings: [] });
});

t.test('Retry-After: seconds, an HTTP date, or 1 s', async (t) => {
  t.equal(retryAfterMs('2'), 2000);
  t.equal(retryAfterMs('0.5'), 500);
  const now = Date.parse('2026-01-01T00:00:00Z');
  t.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now), 30_000);
  t.equal(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now), 0, 'a date past is now');
  t.equal(retryAfterMs(null), 1000);
  t.equal(retryAfterMs('soon'), 1000);
});
