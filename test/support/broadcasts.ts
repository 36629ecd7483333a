import type { TestApp } from './app.ts';
import { eventually } from './receiver.ts';

/** A published template using the props a broadcast gives (`name`, `email`, attributes). */
export async function broadcastTemplate(h: TestApp, key: string, name: string, publish = true) {
  const res = await h.request(key, 'POST', '/templates', {
    name,
    publish,
    subject: 'News for {{name}}',
    document: { body: [{ kind: 'Text', text: 'Hi {{name}} ({{email}}), you are on {{plan}}.' }] },
    props: [
      { name: 'name', type: 'string', default: 'there' },
      { name: 'email', type: 'string', default: '' },
      { name: 'plan', type: 'string', default: 'free' },
    ],
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json() as { id: string; slug: string };
}

export async function audienceWith(h: TestApp, key: string, name: string, emails: string[]) {
  const res = await h.request(key, 'POST', '/audiences', { name });
  if (res.statusCode !== 201) throw new Error(res.body);
  const audience = res.json() as { id: string };
  for (const email of emails) {
    const made = await h.request(key, 'POST', '/contacts', {
      email,
      name: email.split('@')[0]!.toUpperCase(),
      attributes: { plan: 'pro' },
      audienceIds: [audience.id],
    });
    if (made.statusCode !== 201) throw new Error(made.body);
  }
  return audience;
}

/** Waits until the broadcast is completed and the read model counts every email's final answer. */
export async function settledBroadcast(h: TestApp, key: string, id: string, timeoutMs = 60_000) {
  return eventually(async () => {
    const b = (await h.request(key, 'GET', `/broadcasts/${id}`)).json();
    const p = b.progress;
    return b.status === 'completed' && p.delivered + p.bounced >= p.sent && b;
  }, timeoutMs);
}
