import net from 'node:net';
import { POSTGRES_URL } from './databases.ts';

export interface Relay {
  port: number;
  /** Closes every connection and refuses new ones: a database that is down. */
  cut(): Promise<void>;
  /** Resets every open connection, in the middle of whatever it carried, and goes on relaying new ones. */
  reset(): void;
  /** Passes nothing on either way, new connections included, and says nothing: a network partition. */
  silence(): void;
  /** Ends the partition. */
  heal(): void;
  close(): Promise<void>;
}

/** A TCP relay to the shared PostgreSQL that a test can break, as outages look to keyfleet. */
export async function relayToPostgres(): Promise<Relay> {
  const target = new URL(POSTGRES_URL);
  const sockets = new Set<net.Socket>();
  let silent = false;
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  };
  const server = net.createServer((client) => {
    track(client);
    if (silent) return;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    track(upstream);
    client.on('data', (chunk) => silent || upstream.write(chunk));
    upstream.on('data', (chunk) => silent || client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: close,
    reset: () => {
      for (const socket of sockets) socket.resetAndDestroy();
    },
    silence: () => void (silent = true),
    heal: () => void (silent = false),
    close,
  };
}
