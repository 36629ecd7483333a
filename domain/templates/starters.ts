import type { TemplateContent } from './events.ts';

export interface Starter extends TemplateContent {
  slug: string;
  name: string;
  description: string;
}

const text = (t: string, style: Record<string, string | number> = {}) => ({
  kind: 'Text',
  text: t,
  style: { fontSize: '16px', lineHeight: '24px', color: '#333333', ...style },
});
const button = (label: string, href: string) => ({
  kind: 'Button',
  text: label,
  href,
  style: { backgroundColor: '#2563eb', color: '#ffffff', padding: '12px 20px', borderRadius: '6px', fontWeight: 600 },
});
const heading = (t: string) => ({ kind: 'Heading', text: t, level: 1, style: { fontSize: '24px', color: '#111111' } });
const footer = (t: string) => text(t, { fontSize: '12px', color: '#8a8a8a' });
const page = (body: unknown[], preview: string) => ({
  body,
  preview,
  style: { backgroundColor: '#ffffff', fontFamily: 'Helvetica, Arial, sans-serif' },
});

/** Built-in starting points for `POST /templates` with `starter`; the caller's own fields win. */
export const STARTERS: readonly Starter[] = [
  {
    slug: 'welcome',
    name: 'Welcome',
    description: 'Greets a new user and points to the first step.',
    engine: 'blocks',
    subject: 'Welcome to {{product}}',
    document: page(
      [
        heading('Welcome, {{firstName}}!'),
        text('Thanks for joining {{product}}. One click and you are ready.'),
        button('Get started', '{{startUrl}}'),
        { kind: 'Hr' },
        footer('You receive this because you signed up.'),
      ],
      'Your account is ready',
    ),
    html: null,
    slots: [],
    props: [
      { name: 'firstName', type: 'string', required: false, default: 'there', description: 'How to greet the reader' },
      { name: 'product', type: 'string', required: false, default: 'our service', description: null },
      { name: 'startUrl', type: 'url', required: true, default: null, description: 'Where the button leads' },
    ],
  },
  {
    slug: 'password-reset',
    name: 'Password reset',
    description: 'A reset link that expires.',
    engine: 'blocks',
    subject: 'Reset your password',
    document: page(
      [
        heading('Reset your password'),
        text('Someone asked to reset the password of {{email}}. The link works for {{validFor}}.'),
        button('Choose a new password', '{{resetUrl}}'),
        footer('If it was not you, ignore this message; your password stays as it is.'),
      ],
      'Your password reset link',
    ),
    html: null,
    slots: [],
    props: [
      { name: 'email', type: 'string', required: true, default: null, description: null },
      { name: 'validFor', type: 'string', required: false, default: '1 hour', description: null },
      { name: 'resetUrl', type: 'url', required: true, default: null, description: null },
    ],
  },
  {
    slug: 'receipt',
    name: 'Receipt',
    description: 'Order confirmation with a two-column summary.',
    engine: 'blocks',
    subject: 'Your receipt for order {{orderNumber}}',
    document: page(
      [
        heading('Thanks for your order'),
        {
          kind: 'Section',
          style: { border: '1px solid #e5e7eb', borderRadius: '6px', padding: '16px' },
          children: [
            {
              kind: 'Row',
              children: [
                { kind: 'Column', children: [text('Order')] },
                { kind: 'Column', children: [text('{{orderNumber}}', { textAlign: 'right' })] },
              ],
            },
            {
              kind: 'Row',
              children: [
                { kind: 'Column', children: [text('Total')] },
                { kind: 'Column', children: [text('{{total}}', { textAlign: 'right', fontWeight: 700 })] },
              ],
            },
          ],
        },
        { kind: 'Link', text: 'View your order', href: '{{orderUrl}}' },
      ],
      'Order {{orderNumber}} confirmed',
    ),
    html: null,
    slots: [],
    props: [
      { name: 'orderNumber', type: 'string', required: true, default: null, description: null },
      { name: 'total', type: 'string', required: true, default: null, description: 'Formatted amount, e.g. €12.00' },
      { name: 'orderUrl', type: 'url', required: true, default: null, description: null },
    ],
  },
  {
    slug: 'newsletter',
    name: 'Newsletter',
    description: 'A headline, an image and a Markdown body.',
    engine: 'blocks',
    subject: '{{issueTitle}}',
    document: page(
      [
        { kind: 'Img', src: '{{imageUrl}}', alt: 'Header image', width: 600 },
        heading('{{headline}}'),
        { kind: 'Markdown', markdown: '{{body}}' },
        { kind: 'Hr' },
        {
          kind: 'Link',
          text: 'Unsubscribe',
          href: '{{unsubscribeUrl}}',
          style: { fontSize: '12px', color: '#8a8a8a' },
        },
      ],
      '{{issueTitle}}',
    ),
    html: null,
    slots: [{ name: 'issueTitle', description: null, default: 'Our latest news' }],
    props: [
      { name: 'imageUrl', type: 'url', required: true, default: null, description: null },
      { name: 'headline', type: 'string', required: true, default: null, description: null },
      { name: 'body', type: 'string', required: true, default: null, description: 'Markdown' },
      { name: 'unsubscribeUrl', type: 'url', required: true, default: null, description: null },
    ],
  },
  {
    slug: 'plain-html',
    name: 'Plain HTML',
    description: 'A minimal hand-written HTML message.',
    engine: 'html',
    subject: 'A message for {{name}}',
    document: null,
    html:
      '<table role="presentation" width="100%" cellpadding="0" cellspacing="0"><tr><td style="font-family: Arial, sans-serif; font-size: 16px; color: #333333">' +
      '<p>Hello {{name}},</p><p>Write your message here.</p></td></tr></table>',
    slots: [],
    props: [{ name: 'name', type: 'string', required: false, default: 'there', description: null }],
  },
];

export const findStarter = (slug: string) => STARTERS.find((s) => s.slug === slug);
