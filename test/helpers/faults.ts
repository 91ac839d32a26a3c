/**
 * Faults injected where no real part can be made to fail on cue, in tests
 * of a casket running in this process: a body that fails mid-read, and the
 * operator's log read back, a backend's reads answered otherwise.
 */
import { Readable } from 'node:stream';
import type { Backend, ObjectReader } from '../../src/backends/types.js';

/** A body that gives `first`, then fails on the next read: a disk failing mid-read, an upstream reset after its first bytes. */
export function tornBody(first: string, message = 'disk failed mid-read'): Readable {
  let sent = false;
  return new Readable({
    read() {
      if (sent) this.destroy(new Error(message));
      else {
        sent = true;
        this.push(Buffer.from(first));
      }
    },
  });
}

type LogMethod = (obj: never, msg?: never) => void;

/** What `log[level]` is called with from now on, still logged; `restore()` puts the method back. */
export function captureLog<L extends Record<'warn' | 'error', LogMethod>>(log: L, level: 'warn' | 'error'): { logged: Array<[unknown, unknown]>; restore(): void } {
  const original = log[level];
  const logged: Array<[unknown, unknown]> = [];
  log[level] = ((obj: unknown, msg?: unknown) => {
    logged.push([obj, msg]);
    return original.call(log, obj as never, msg as never);
  }) as L[typeof level];
  return { logged, restore: () => void (log[level] = original) };
}

/** While `run` runs, the backend's reads are answered by `serve` (`real` reads the backend itself, of that key). */
export async function withReads<T>(backend: Pick<Backend, 'getObject'>, serve: (key: string, versionId: string | undefined, real: (versionId?: string) => Promise<ObjectReader | null>) => Promise<ObjectReader | null>, run: () => Promise<T>): Promise<T> {
  const getObject = backend.getObject.bind(backend);
  backend.getObject = (b, k, v) => serve(k, v, (w) => getObject(b, k, w));
  try {
    return await run();
  } finally {
    backend.getObject = getObject;
  }
}
