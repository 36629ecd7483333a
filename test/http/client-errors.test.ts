import net from 'node:net';
import t from 'tap';
import { startTestApp } from '../support/app.ts';

/** Writes raw bytes to the server and reads until it closes the connection. */
async function raw(
  port: number,
  bytes: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c) => chunks.push(c));
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(bytes);
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const text = Buffer.concat(chunks).toString('utf8');
  const [head, ...rest] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head!.split('\r\n');
  return {
    status: Number(statusLine!.split(' ')[1]),
    headers: Object.fromEntries(
      lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    ),
    body: rest.join('\r\n\r\n'),
  };
}

t.test('requests Node cannot parse answer the error envelope with a request id, over a real socket', async (t) => {
  const h = await startTestApp(t);
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (h.app.server.address() as net.AddressInfo).port;
  const cases: [string, string, number, string][] = [
    [
      'headers past 16 KiB',
      `GET /ping HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    ['a request line that is not HTTP', 'HELLO THERE\r\n\r\n', 400, 'invalid_request'],
    [
      'both Content-Length and Transfer-Encoding',
      'POST /keys HTTP/1.1\r\nHost: localhost\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      'invalid_request',
    ],
    [
      'NUL in a header value',
      'GET /ping HTTP/1.1\r\nHost: localhost\r\nUser-Agent: a\u0000b\r\n\r\n',
      400,
      'invalid_request',
    ],
    ['a space before a header colon', 'GET /ping HTTP/1.1\r\nHost : localhost\r\n\r\n', 400, 'invalid_request'],
    [
      'a broken chunk in a body already being read',
      'POST /keys HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nzz\r\n',
      400,
      'invalid_request',
    ],
  ];
  for (const [label, bytes, status, code] of cases) {
    const res = await raw(port, bytes);
    t.equal(res.status, status, label);
    t.match(res.headers['content-type'], /^application\/json/, label);
    t.match(res.headers['request-id'], /^req_[0-9a-f]{24}$/, label);
    const error = JSON.parse(res.body).error;
    t.same(
      error,
      {
        type: 'invalid_request_error',
        code,
        message: error.message,
        param: null,
        docUrl: `http://127.0.0.1:${port}/docs/errors#${code}`,
        requestId: res.headers['request-id'],
      },
      label,
    );
  }
  const docs = await h.request(null, 'GET', '/docs/errors');
  for (const code of ['headers_too_large', 'invalid_request'])
    t.match(docs.body, `id="${code}"`, `the error table lists ${code}`);
  const ping = await raw(port, 'GET /ping HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
  t.equal(ping.status, 401, 'a well-formed request on the same server is answered as before');
});
