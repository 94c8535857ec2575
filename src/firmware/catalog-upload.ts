import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HttpError, badRequest } from '../http/errors.ts';

export interface SpooledFile {
  path: string;
  size: number;
  sha256: string;
  remove(): Promise<void>;
}

export const payloadTooLarge = (maxBytes: number) =>
  new HttpError(413, 'PAYLOAD_TOO_LARGE', `body: a firmware file may have at most ${maxBytes} bytes`);

/**
 * Writes an upload to a temporary file while hashing and counting it, so that storing it
 * in the database afterwards is one short transaction whatever the client's speed, and no
 * more than a buffer of it is ever in memory.
 */
export async function spoolUpload(source: Readable, directory: string, maxBytes: number): Promise<SpooledFile> {
  await fs.promises.mkdir(directory, { recursive: true });
  const file = path.join(directory, `upload-${randomUUID()}`);
  const remove = () => fs.promises.rm(file, { force: true });
  const hash = createHash('sha256');
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (size > maxBytes) return callback(payloadTooLarge(maxBytes));
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  // pipe(), unlike pipeline(), leaves the request stream intact when the limit is hit, so
  // that the 413 reply still reaches the client; the rest of the body is then discarded.
  source.on('error', (error) => measure.destroy(error));
  source.on('close', () => {
    if (!source.readableEnded) measure.destroy(new Error('upload aborted'));
  });
  source.pipe(measure);
  try {
    await pipeline(measure, fs.createWriteStream(file, { mode: 0o600 }));
  } catch (error) {
    source.unpipe(measure);
    await remove();
    throw error instanceof HttpError ? error : badRequest('body: the upload was interrupted');
  }
  return { path: file, size, sha256: hash.digest('hex'), remove };
}
