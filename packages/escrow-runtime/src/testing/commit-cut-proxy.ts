// A TCP proxy in front of Postgres that produces the ambiguous commit of issue 8: the client's
// COMMIT reaches the server and is applied, then the connection is cut before the server's reply
// reaches the client, which therefore cannot know whether its transaction is durable. It reads the
// wire protocol (frontend/backend messages, no TLS) only to find that COMMIT and its reply; every
// other byte is passed through untouched.
import net from 'node:net';

export interface CommitCutProxy {
  /** `databaseUrl` with host and port pointing at the proxy. */
  readonly url: string;
  /**
   * Arms one cut: the next COMMIT any proxied connection sends is forwarded, the server's
   * CommandComplete for it is swallowed and both sides of that connection are closed. Resolves once
   * the cut has happened (the server has committed by then).
   */
  cutAfterNextCommit(): Promise<void>;
  /** Commits cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

/** Splits a byte stream into protocol messages; the first client message has no type byte. */
class Framer {
  #buf: Buffer = Buffer.alloc(0);
  #typed: boolean;

  constructor(typed: boolean) {
    this.#typed = typed;
  }

  push(chunk: Buffer): { type: string; body: Buffer; raw: Buffer }[] {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
    const out: { type: string; body: Buffer; raw: Buffer }[] = [];
    for (;;) {
      const head = this.#typed ? 5 : 4;
      if (this.#buf.length < head) break;
      const length = this.#buf.readInt32BE(this.#typed ? 1 : 0);
      const total = (this.#typed ? 1 : 0) + length;
      if (this.#buf.length < total) break;
      const raw = this.#buf.subarray(0, total);
      this.#buf = this.#buf.subarray(total);
      if (this.#typed) {
        out.push({ type: String.fromCharCode(raw[0]!), body: raw.subarray(5), raw });
      } else {
        const code = raw.readInt32BE(4);
        if (code === SSL_REQUEST || code === GSSENC_REQUEST)
          throw new Error('commit-cut proxy: TLS/GSS negotiation is not supported');
        out.push({ type: '', body: raw.subarray(4), raw });
        this.#typed = true;
      }
    }
    return out;
  }
}

const cString = (b: Buffer, from: number) => {
  const end = b.indexOf(0, from);
  return { value: b.toString('utf8', from, end), next: end + 1 };
};
const isCommit = (query: string) => /^\s*commit\s*;?\s*$/i.test(query);

export async function startCommitCutProxy(databaseUrl: string): Promise<CommitCutProxy> {
  const target = new URL(databaseUrl);
  const targetPort = Number(target.port || 5432);
  const targetHost = target.hostname;
  const waiting: (() => void)[] = [];
  let cuts = 0;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const fromClient = new Framer(false);
    const fromServer = new Framer(true);
    /** Prepared statement name → SQL, so a Bind of a cached `commit` statement is recognised. */
    const statements = new Map<string, string>();
    let cutThisCommit: (() => void) | undefined;
    let cut = false;
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };

    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      for (const m of fromClient.push(chunk)) {
        let query: string | undefined;
        if (m.type === 'Q') query = cString(m.body, 0).value;
        else if (m.type === 'P') {
          const name = cString(m.body, 0);
          query = cString(m.body, name.next).value;
          statements.set(name.value, query);
          if (name.value !== '') query = undefined; // runs at its Bind
        } else if (m.type === 'B') {
          const portal = cString(m.body, 0);
          query = statements.get(cString(m.body, portal.next).value);
        }
        if (query !== undefined && isCommit(query) && !cutThisCommit && waiting.length > 0)
          cutThisCommit = waiting.shift();
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cut) return;
      const pass: Buffer[] = [];
      for (const m of fromServer.push(chunk)) {
        if (cutThisCommit && m.type === 'C' && cString(m.body, 0).value === 'COMMIT') {
          // The server has committed; the client never hears it.
          if (pass.length > 0) client.write(Buffer.concat(pass));
          cut = true;
          cuts += 1;
          closeBoth();
          cutThisCommit();
          return;
        }
        pass.push(m.raw);
      }
      if (pass.length > 0) client.write(Buffer.concat(pass));
    });
    for (const s of [client, upstream]) {
      s.on('error', closeBoth);
      s.on('close', () => {
        sockets.delete(s);
        closeBoth();
      });
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);

  return {
    url: url.toString(),
    get cuts() {
      return cuts;
    },
    cutAfterNextCommit: () => new Promise<void>((resolve) => waiting.push(resolve)),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
