/** node:crypto SHA-256 / HMAC-SHA256 in the constructor shape @smithy/signature-v4 expects. */
import { createHash, createHmac } from 'node:crypto';

export class Sha256 {
  private readonly hash;
  constructor(secret?: unknown) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', typeof secret === 'string' ? Buffer.from(secret, 'utf8') : (secret as Uint8Array));
  }
  update(data: string | Uint8Array): void {
    this.hash.update(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {}
}
