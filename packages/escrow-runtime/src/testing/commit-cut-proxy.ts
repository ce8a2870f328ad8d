// A TCP proxy in front of Postgres that produces an ambiguous commit: a transaction's
// commit reaches the server and is applied, then the connection is cut before the server's reply
// reaches the client, which therefore cannot know whether its write is durable. It reads the wire
// protocol (frontend/backend messages, no TLS) only to find the chosen statement and the server's
// ReadyForQuery that ends its transaction; every other byte is passed through untouched.
import net from 'node:net';

export interface CommitCutProxy {
  /** `databaseUrl` with host and port pointing at the proxy. */
  readonly url: string;
  /**
   * Arms one cut at the commit of the next transaction, on any proxied connection, that runs a
   * statement matching `statement` (default: an explicit COMMIT): once that statement has been
   * sent, the server's replies from each CommandComplete to the next ReadyForQuery are held back;
   * at the ReadyForQuery saying the transaction is over and committed (status idle) they are
   * dropped and both sides of the connection are closed (postgres.js, like libpq, settles a query
   * only at ReadyForQuery, so the client learns nothing of the outcome). A
   * single statement outside BEGIN commits on its own and is cut the same way. Resolves once the cut
   * has happened (the server has committed by then).
   */
  cutAtCommit(statement?: RegExp): Promise<void>;
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
const EXPLICIT_COMMIT = /^\s*commit\s*;?\s*$/i;
const ROLLBACK = /^\s*rollback\b/i;

interface Waiter {
  readonly statement: RegExp;
  readonly resolve: () => void;
}

export async function startCommitCutProxy(databaseUrl: string): Promise<CommitCutProxy> {
  const target = new URL(databaseUrl);
  const targetPort = Number(target.port || 5432);
  const targetHost = target.hostname;
  const waiting: Waiter[] = [];
  let cuts = 0;
  const sockets = new Set<net.Socket>();

  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, targetHost);
    sockets.add(client);
    sockets.add(upstream);
    const fromClient = new Framer(false);
    const fromServer = new Framer(true);
    /** Prepared statement name → SQL, so a Bind of a cached statement is recognised. */
    const statements = new Map<string, string>();
    /** The armed cut this connection took: set once its statement was sent. */
    let claimed: Waiter | undefined;
    /** Server messages held back since a CommandComplete of the claimed transaction. */
    let held: Buffer[] = [];
    let holding = false;
    /** The claimed transaction errored or was rolled back: its end is no commit. */
    let aborted = false;
    let cut = false;
    const closeBoth = () => {
      client.destroy();
      upstream.destroy();
    };

    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      for (const m of fromClient.push(chunk)) {
        // A statement runs at Query or at Bind (of a statement Parsed now or earlier), never at Parse.
        let query: string | undefined;
        if (m.type === 'Q') query = cString(m.body, 0).value;
        else if (m.type === 'P') {
          const name = cString(m.body, 0);
          statements.set(name.value, cString(m.body, name.next).value);
        } else if (m.type === 'B') {
          const portal = cString(m.body, 0);
          query = statements.get(cString(m.body, portal.next).value);
        }
        if (query !== undefined && !claimed) {
          const i = waiting.findIndex((w) => w.statement.test(query));
          if (i >= 0) claimed = waiting.splice(i, 1)[0];
        } else if (query !== undefined && ROLLBACK.test(query)) aborted = true;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (cut) return;
      const pass: Buffer[] = [];
      for (const m of fromServer.push(chunk)) {
        if (claimed && m.type === 'E') aborted = true; // ErrorResponse
        // Held from a CommandComplete to the ReadyForQuery that follows it (the server waits for
        // nothing in between); everything else, e.g. replies to a Describe + Flush, passes at once.
        if (claimed && m.type === 'C') holding = true;
        if (!holding) {
          pass.push(m.raw);
          continue;
        }
        held.push(m.raw);
        if (m.type !== 'Z' || !claimed) continue;
        const status = String.fromCharCode(m.body[0]!);
        if (status === 'I' && !aborted) {
          // Committed; the client never hears it.
          if (pass.length > 0) client.write(Buffer.concat(pass));
          cut = true;
          cuts += 1;
          closeBoth();
          claimed.resolve();
          return;
        }
        pass.push(...held);
        held = [];
        holding = false;
        if (status === 'I') {
          // The transaction ended without committing: the cut stays armed for the next one.
          waiting.unshift(claimed);
          claimed = undefined;
          aborted = false;
        }
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
    cutAtCommit: (statement = EXPLICIT_COMMIT) =>
      new Promise<void>((resolve) => waiting.push({ statement, resolve })),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
