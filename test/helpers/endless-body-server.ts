import diagnosticsChannel from 'node:diagnostics_channel';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One answer of an EndlessBodyServer, as the server saw it. */
export interface EndlessAnswer {
  path: string;
  method: string;
  /**
   * Body bytes the kernel accepted from the server before the client dropped the connection:
   * what the client read, and what the socket buffers of both ends took in meanwhile (on
   * loopback up to net.ipv4.tcp_wmem's maximum, 4 MiB on Linux by default, whether the
   * client reads or not).
   */
  bytesWritten: number;
  /** The port the client connected from (its socket's local port). */
  clientPort: number;
  /** When the request arrived and when the client closed the connection (performance.now()). */
  startedAt: number;
  closedAt: number | undefined;
}

export type BodyMode =
  /** 64 KiB chunks as fast as the client takes them. */
  | 'endless'
  /** One byte every 50 ms, without end. */
  | 'drip'
  /** A short body, then the end of the answer (a well-behaved server). */
  | 'short'
  /** 4 MiB of valid JSON, `{"keys":[],"padding":"xxx…"}` (an empty JWKS, far too large), then the end. */
  | 'huge';

const HUGE_BYTES = 4 * 1024 * 1024;

/**
 * A real HTTP server on 127.0.0.1 that answers every request with `status` and then, by
 * `mode`, a body without end. It counts on its side what the client let it write, so that a
 * test sees how much of an answer the client read before it closed the connection.
 */
export class EndlessBodyServer {
  readonly answers: EndlessAnswer[] = [];
  status = 200;
  mode: BodyMode = 'endless';
  headers: Record<string, string> = { 'content-type': 'application/json' };
  /** Sockets the server accepted: a client that keeps connections alive opens fewer than it sends requests. */
  connections = 0;
  /**
   * Bytes that undici clients of this process (keyfleet's agents, and Node's fetch) read from
   * their connections to this server, by the client's local port, once those connections closed.
   */
  readonly #clientBytesRead = new Map<number, number>();
  readonly #watchClients = (message: unknown) => {
    const socket = (message as { socket: Socket }).socket;
    if (socket.remotePort !== this.port) return;
    const port = socket.localPort!;
    socket.once('close', () => this.#clientBytesRead.set(port, socket.bytesRead));
  };

  readonly #server = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => this.#answer(request, response));
  });

  static async start(): Promise<EndlessBodyServer> {
    const server = new EndlessBodyServer();
    server.#server.on('connection', () => server.connections++);
    diagnosticsChannel.subscribe('undici:client:connected', server.#watchClients);
    await new Promise<void>((resolve) => server.#server.listen(0, '127.0.0.1', resolve));
    return server;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  url(path = '/endless'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  answersAt(path: string): EndlessAnswer[] {
    return this.answers.filter((answer) => answer.path === path);
  }

  /** What the client read of an answer's connection (status line, headers and body), once it closed it. */
  clientBytesRead(answer: EndlessAnswer): number | undefined {
    return this.#clientBytesRead.get(answer.clientPort);
  }

  #answer(request: http.IncomingMessage, response: http.ServerResponse): void {
    const answer: EndlessAnswer = { path: request.url ?? '', method: request.method ?? '', bytesWritten: 0, clientPort: request.socket.remotePort!, startedAt: performance.now(), closedAt: undefined };
    this.answers.push(answer);
    const mode = this.mode;
    if (mode === 'short') {
      response.writeHead(this.status, this.headers).end('{"ok":true}');
      answer.closedAt = performance.now();
      return;
    }
    response.writeHead(this.status, this.headers);
    let closed = false;
    let left = mode === 'huge' ? HUGE_BYTES : Infinity;
    response.on('close', () => {
      closed = true;
      answer.closedAt = performance.now();
    });
    const chunk = Buffer.alloc(mode === 'drip' ? 1 : 64 * 1024, 'x');
    const counted = (error?: Error | null) => {
      if (!error) answer.bytesWritten += chunk.length;
    };
    if (mode === 'huge') response.write('{"keys":[],"padding":"');
    const writeMore = () => {
      if (closed) return;
      if ((left -= chunk.length) < 0) {
        response.end('"}');
        return;
      }
      if (mode === 'drip') {
        response.write(chunk, counted);
        setTimeout(writeMore, 50);
      } else if (response.write(chunk, counted)) setImmediate(writeMore);
      else response.once('drain', writeMore);
    };
    writeMore();
  }

  async close(): Promise<void> {
    diagnosticsChannel.unsubscribe('undici:client:connected', this.#watchClients);
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
