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
  try {
    await pipeline(source, measure, fs.createWriteStream(file, { mode: 0o600 }));
  } catch (error) {
    await remove();
    throw error instanceof HttpError ? error : badRequest('body: the upload was interrupted');
  }
  return { path: file, size, sha256: hash.digest('hex'), remove };
}
