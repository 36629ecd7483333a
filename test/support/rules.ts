import type { TestApp } from './app.ts';

/** A published template for a rule's `reply` (automatic replies send it with no props). */
export async function replyTemplate(h: TestApp, key: string, subject: string): Promise<{ id: string }> {
  const res = await h.request(key, 'POST', '/templates', {
    name: subject,
    publish: true,
    subject,
    document: { body: [{ kind: 'Text', text: 'I am away.' }] },
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
}
