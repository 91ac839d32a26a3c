/**
 * Pre-images for rollback (docs/design.md §10): with --keep-pre-images, the
 * version an agent's overwrite or delete is about to replace is kept,
 * content-addressed by its SHA-256, before the write commits — so
 * `casket rollback` can put it back on a bucket without versioning.
 *
 * Best effort, like retention (retention/retainer.ts): a version too large,
 * multipart (its ETag is not the SHA-256 of its content), or a store that
 * fails is simply not kept, and a later rollback reports that key as
 * unrecoverable rather than guess. The write itself is never refused for it.
 */
import { readWhole } from '../backends/read-whole.js';
import type { Services } from './context.js';

export async function keepPreImage(services: Services, bucket: string, key: string): Promise<void> {
  const preImages = services.preImages;
  if (!preImages) return;
  try {
    const reader = await services.backend.getObject(bucket, key);
    if (!reader) return;
    const { info } = reader;
    // Already kept (or not keepable): the bytes are not read again.
    // Kept as a version of this key: rollback reads it back for this key only.
    const version = { bucket, key, etag: info.etag };
    // An SSE-C version is not kept unencrypted for anyone to restore (backends/customer-key.ts).
    if (!preImages.eligible(info.etag, info.size) || info.headers.sseCustomerAlgorithm !== undefined || (await preImages.touch(version))) {
      reader.release?.();
      return;
    }
    await preImages.kept(version, await readWhole(reader));
  } catch (err) {
    services.log.warn({ error: err instanceof Error ? err.message : String(err), bucket, key }, 'pre-image not kept');
  }
}
