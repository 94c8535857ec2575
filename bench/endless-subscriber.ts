/**
 * The hostile status subscriber of bench/hostile-subscriber.ts: the tests' EndlessBodyServer
 * in 'endless' mode (200, then 64 KiB chunks as fast as the client takes them, without end),
 * run as a child process with an IPC channel so that writing its bodies does not take the
 * load generator's event loop. It sends `{ port }` once listening, and answers every message
 * with an EndlessReport.
 */
import { EndlessBodyServer } from '../test/helpers/endless-body-server.ts';

/** What the server has written so far, over every answer since it started. */
export interface EndlessReport {
  /** Requests answered: each a delivery attempt of one status event. */
  answers: number;
  /** Of those, answers whose connection the client has not closed yet. */
  open: number;
  bytesWritten: number;
  largestAnswerBytes: number;
}

function report(server: EndlessBodyServer): EndlessReport {
  let bytesWritten = 0;
  let largestAnswerBytes = 0;
  let open = 0;
  for (const answer of server.answers) {
    bytesWritten += answer.bytesWritten;
    largestAnswerBytes = Math.max(largestAnswerBytes, answer.bytesWritten);
    if (answer.closedAt === undefined) open++;
  }
  return { answers: server.answers.length, open, bytesWritten, largestAnswerBytes };
}

const server = await EndlessBodyServer.start();
server.mode = 'endless';
process.on('message', () => process.send!(report(server)));
process.on('SIGTERM', () => process.exit(0));
// The bench that started it has gone (ended or killed): nothing else would stop it.
process.on('disconnect', () => process.exit(0));
process.send!({ port: server.port });
