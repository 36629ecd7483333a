import type { AddressInfo } from 'node:net';
import type { SMTPServer } from 'smtp-server';

/**
 * What our two smtp-server listeners (inbound MX, submission) share: binding, which settles only
 * once the port is bound or rejects with the bind error (a port in use stops the start), the port
 * bound, and closing, which gives open sessions smtp-server's close timeout to finish.
 */
export function listenSmtp(server: SMTPServer, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
}

export const smtpPort = (server: SMTPServer): number => (server.server.address() as AddressInfo).port;

export const closeSmtp = (server: SMTPServer): Promise<void> => new Promise((resolve) => server.close(() => resolve()));
