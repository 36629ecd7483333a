import net from 'node:net';
import dns2, { Packet, type Resource } from 'dns2';

/** What one name holds. TXT values are the character-strings of each record (a long value split in chunks). */
export interface ZoneEntry {
  TXT?: (string | string[])[];
  MX?: { exchange: string; priority: number }[];
  CNAME?: string;
  A?: string[];
  AAAA?: string[];
}

/** How a name misbehaves instead of answering from its records. */
export type Misbehaviour =
  | { kind: 'servfail' }
  | { kind: 'refused' }
  /** Never answers at all (the client times out). */
  | { kind: 'silent' }
  /** Answers from its records, after `ms`. */
  | { kind: 'slow'; ms: number };

export interface Query {
  name: string;
  type: string;
  transport: 'udp' | 'tcp';
}

const TYPE_NAME = new Map<number, string>(Object.entries(Packet.TYPE).map(([name, code]) => [code, name]));

const normalise = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * A real DNS server (dns2: the wire protocol over UDP and TCP) on 127.0.0.1, one port for both
 * as `DNS_SERVERS` expects. Tests fill its zone: records per name, and names that answer
 * SERVFAIL or REFUSED, never answer, or answer late. A name not in the zone is NXDOMAIN; a name
 * with records but not of the asked type is NOERROR with no answer (NODATA). A CNAME is followed
 * inside the zone, as a recursive resolver would. Answers carry TTL 0 so no resolver keeps them.
 * UDP answers larger than the client's EDNS size (512 without EDNS) come back truncated, and
 * the client asks again over TCP.
 */
export async function startDnsServer(t: { teardown(fn: () => Promise<void> | void): void }) {
  const zone = new Map<string, ZoneEntry>();
  const behaviour = new Map<string, Misbehaviour>();
  const queries: Query[] = [];
  const pending = new Set<NodeJS.Timeout>();

  const answer = (request: Packet, send: (response: Packet) => unknown, client: unknown) => {
    const [question] = request.questions;
    if (!question) return;
    const name = normalise(question.name);
    const type = TYPE_NAME.get(question.type) ?? String(question.type);
    queries.push({ name, type, transport: client instanceof net.Socket ? 'tcp' : 'udp' });
    const response = Packet.createResponseFromRequest(request);
    response.header.aa = 1;
    response.header.ra = 1;
    const misbehaviour = behaviour.get(name);
    if (misbehaviour?.kind === 'silent') return;
    if (misbehaviour?.kind === 'servfail' || misbehaviour?.kind === 'refused') {
      response.header.rcode = misbehaviour.kind === 'servfail' ? Packet.RCODE.SERVFAIL : Packet.RCODE.REFUSED;
      send(response);
      return;
    }
    fill(response, question.name, type);
    if (misbehaviour?.kind === 'slow') {
      const timer = setTimeout(() => {
        pending.delete(timer);
        send(response);
      }, misbehaviour.ms);
      pending.add(timer);
      return;
    }
    send(response);
  };

  const fill = (response: Packet, asked: string, type: string) => {
    let owner = asked;
    // Bounded, so a CNAME loop written by a test ends.
    for (let hops = 0; hops < 8; hops++) {
      const entry = zone.get(normalise(owner));
      if (!entry) {
        if (hops === 0) response.header.rcode = Packet.RCODE.NXDOMAIN;
        return;
      }
      const base = { name: owner, class: Packet.CLASS.IN, ttl: 0 };
      if (entry.CNAME !== undefined) {
        response.answers.push({ ...base, type: Packet.TYPE.CNAME, domain: entry.CNAME } as Resource);
        if (type === 'CNAME') return;
        owner = entry.CNAME;
        continue;
      }
      if (type === 'TXT')
        for (const data of entry.TXT ?? []) response.answers.push({ ...base, type: Packet.TYPE.TXT, data } as Resource);
      if (type === 'MX')
        for (const mx of entry.MX ?? []) response.answers.push({ ...base, type: Packet.TYPE.MX, ...mx } as Resource);
      if (type === 'A')
        for (const address of entry.A ?? [])
          response.answers.push({ ...base, type: Packet.TYPE.A, address } as Resource);
      if (type === 'AAAA')
        for (const address of entry.AAAA ?? [])
          response.answers.push({ ...base, type: Packet.TYPE.AAAA, address } as Resource);
      return;
    }
  };

  const { port, close } = await listenOnOneFreePort(answer as dns2.DnsHandler);
  t.teardown(async () => {
    for (const timer of pending) clearTimeout(timer);
    await close();
  });

  return {
    /** `127.0.0.1:<port>`, the form `DNS_SERVERS` takes. */
    address: `127.0.0.1:${port}`,
    port,
    /** Every question asked so far, in order. */
    queries,
    /** Replaces what `name` holds (and how it behaves: it answers normally again). */
    set(name: string, entry: ZoneEntry) {
      zone.set(normalise(name), entry);
      behaviour.delete(normalise(name));
    },
    /** Removes `name`: it answers NXDOMAIN. */
    remove(name: string) {
      zone.delete(normalise(name));
      behaviour.delete(normalise(name));
    },
    misbehave(name: string, how: Misbehaviour) {
      behaviour.set(normalise(name), how);
    },
  };
}

export type TestDnsServer = Awaited<ReturnType<typeof startDnsServer>>;

/**
 * UDP and TCP on the same port: a free TCP port is found first, then a server binds both to it
 * (a fresh server again if UDP finds the port taken meanwhile).
 */
async function listenOnOneFreePort(handle: dns2.DnsHandler) {
  for (let attempt = 0; ; attempt++) {
    const port = await freeTcpPort();
    const server = dns2.createServer({ udp: true, tcp: true, handle });
    server.on('requestError', () => {});
    // Resolvers keep TCP connections open; closing cuts them rather than waiting for them.
    const connections = new Set<net.Socket>();
    const tcp = (server as unknown as { servers: { tcp: net.Server } }).servers.tcp;
    tcp.on('connection', (socket) => {
      connections.add(socket);
      socket.once('close', () => connections.delete(socket));
    });
    const close = async () => {
      const closed = server.close();
      for (const socket of connections) socket.destroy();
      await closed;
    };
    const failed = new Promise<Error>((resolve) => server.once('error', resolve));
    const listening = server
      .listen({ udp: { port, address: '127.0.0.1' }, tcp: { port, address: '127.0.0.1' } })
      .then(() => null);
    const outcome = await Promise.race([listening, failed]);
    if (outcome === null) return { port, close };
    for (const s of Object.values((server as unknown as { servers: Record<string, { close(): void }> }).servers)) {
      try {
        s.close();
      } catch {}
    }
    if (attempt === 10) throw outcome;
  }
}

export function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
