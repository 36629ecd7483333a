import { startSendingApp } from './emails.ts';
import { outsideDomains, startTestInbound } from './inbound.ts';

/**
 * The sending app with the inbound listener: mail arrives from outside (nodemailer as another
 * server's MTA, DKIM-signed by outside.test), and files are uploaded through the api.
 */
export async function startFilesApp(t: Parameters<typeof startSendingApp>[0]) {
  const app = await startSendingApp(t);
  const outside = await outsideDomains(app.dns);
  const mx = await startTestInbound(t, app.h.system);
  let n = 0;
  /** Mail from outside to `to`; answers its thread as `GET /threads/{id}` shows it. */
  const arrive = async (key: string, to: string, options: Record<string, unknown> = {}) => {
    const messageId = `<f${++n}-${Date.now()}@outside.test>`;
    await mx.send({ from: 'olga@outside.test', to: [to] }, await outside.signed({ to, messageId, ...options }));
    const { rows } = await app.h.system.database.pool.query(
      'SELECT thread_id FROM thread_messages WHERE header_id = $1',
      [messageId.slice(1, -1)],
    );
    const thread = await app.h.request(key, 'GET', `/threads/${rows[0].thread_id}`);
    if (thread.statusCode !== 200) throw new Error(thread.body);
    return thread.json();
  };
  /** Uploads `bytes` as `filename` (query `?…` appended as given). */
  const upload = (key: string, filename: string | null, bytes: Buffer | string, query = '', type = 'text/plain') =>
    app.h.request(key, 'POST', `/files${query}`, Buffer.from(bytes), {
      'content-type': type,
      ...(filename === null ? {} : { 'x-filename': encodeURIComponent(filename) }),
    });
  return { ...app, arrive, upload };
}
