/**
 * s3/capture.ts: the copy of a body kept for retention (docs/design.md §6) is the
 * whole body or nothing — nothing past the limit, nothing from a source that
 * failed — and the consumer sees every byte and every error as without it.
 */
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { capture } from '../../src/s3/capture.js';

async function drain(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('capture', () => {
  it('copies a body within the limit, whole, once it ended', async () => {
    const c = capture(Readable.from([Buffer.from('hello '), Buffer.from('world')]), 100);
    expect(c.captured()).toBeUndefined();
    expect((await drain(c.stream)).toString()).toBe('hello world');
    expect(c.captured()?.toString()).toBe('hello world');
  });

  it('passes a body past the limit through, and keeps nothing of it', async () => {
    const c = capture(Readable.from([Buffer.alloc(60, 1), Buffer.alloc(60, 2)]), 100);
    expect((await drain(c.stream)).length).toBe(120);
    expect(c.captured()).toBeUndefined();
  });

  it('fails with its source and keeps nothing', async () => {
    const source = new Readable({ read() {} });
    const c = capture(source, 100);
    source.push(Buffer.from('part'));
    source.destroy(new Error('checksum mismatch'));
    await expect(drain(c.stream)).rejects.toThrow('checksum mismatch');
    expect(c.captured()).toBeUndefined();
  });

  it('fails when its source closes before its end (a client that hangs up mid-upload), and keeps nothing', async () => {
    const source = new Readable({ read() {} });
    const c = capture(source, 100);
    source.push(Buffer.from('part'));
    source.destroy();
    await expect(drain(c.stream)).rejects.toThrow(/premature close/i);
    expect(c.captured()).toBeUndefined();
  });

  it('destroys its source when the consumer goes away', async () => {
    const source = new Readable({ read() {} });
    const c = capture(source, 100);
    source.push(Buffer.from('part'));
    c.stream.destroy();
    await new Promise((resolve) => source.once('close', resolve));
    expect(source.destroyed).toBe(true);
    expect(c.captured()).toBeUndefined();
  });
});
