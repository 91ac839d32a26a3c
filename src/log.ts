/**
 * JSON logs (pino): one line per request with its request id, plus start-up
 * and errors. pino because it is the fastest well-kept JSON logger for Node.
 *
 * Written to stdout through sonic-boom's asynchronous mode (libuv's thread
 * pool), never with a blocking write on the event loop. A log reader that
 * stalls (a full pipe, a stuck collector) must not stall the proxy. A
 * synchronous write(2) per line measured 9% less CPU per 4 KiB PutObject,
 * but it froze casket as soon as nobody read its stdout: a test on Node 22
 * hung that way, and test/project/stalled-log.test.ts holds casket to
 * serving through it (README, Performance).
 *
 * Request lines are batched, as nginx's `access_log … buffer=64k flush=1s`
 * does: one hand-off to the thread pool per BATCH_CHARS of lines or per
 * flushMs, whichever comes first, instead of one per request (each hand-off
 * is a futex wake of a pool thread and a completion back). Every other line
 * (start-up, reloads, warnings, errors, the stop) is written at once, after
 * the request lines held before it, so order is kept and news is not late.
 * flushMs 0 writes every line at once. What is held is written on exit
 * (process.exit, a fatal error), and pino's destination flushes the rest.
 *
 * Why not sonic-boom's own minLength: a flush asked for while a write is in
 * flight is forgotten once that write ends with less than minLength left, so
 * a timer could not bound the delay, nor a warning go out promptly.
 *
 * What waits for a stalled reader is kept in memory up to MAX_BUFFERED; past
 * that, lines are dropped rather than memory grown without bound, and
 * casket logs how many once the reader is back.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** Log bytes held for a reader that stopped reading, before lines are dropped. */
const MAX_BUFFERED = 16 * 1024 * 1024;
/** Request lines held before a write is started (nginx: buffer=64k); characters, as bytes for ASCII JSON. */
const BATCH_CHARS = 64 * 1024;
/** The message of the one line per request (server.ts): the access log, batched. */
const REQUEST_MSG = 'request';
/** pino's level number for info: request lines above it (warn, error) are not held. */
const INFO = 30;

interface Sink {
  write(data: string): unknown;
  flushSync(): void;
}

/** What pino hands its stream (pino.symbols.needsMetadataGsym asks it to set lastLevel and lastMsg first). */
class Batcher {
  readonly [pino.symbols.needsMetadataGsym] = true as const;
  lastLevel = 0;
  lastMsg = '';
  lastTime = '';
  lastObj: object = {};
  lastLogger: unknown;
  private held = '';
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly out: Sink,
    private readonly flushMs: number,
  ) {}

  write(line: string): void {
    this.held += line;
    if (this.flushMs === 0 || this.lastMsg !== REQUEST_MSG || this.lastLevel > INFO || this.held.length >= BATCH_CHARS) this.flush();
    else if (this.timer === undefined) this.timer = setTimeout(this.flush, this.flushMs).unref();
  }

  readonly flush = (): void => {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held === '') return;
    const batch = this.held;
    this.held = '';
    this.out.write(batch);
  };

  /** On exit: no event loop left, so what is held goes out with blocking writes. */
  flushSync(): void {
    this.flush();
    try {
      this.out.flushSync();
    } catch {
      /* stdout gone (EPIPE): nowhere to write */
    }
  }
}

// One exit listener for every logger (in-process tests make many); a logger
// that is gone is not kept alive by it.
const live = new Set<WeakRef<Batcher>>();
let exitHooked = false;
function flushOnExit(batcher: Batcher): void {
  live.add(new WeakRef(batcher));
  if (exitHooked) return;
  exitHooked = true;
  process.on('exit', () => {
    for (const ref of live) ref.deref()?.flushSync();
  });
}

function lines(data: unknown): number {
  const text = String(data);
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

export function createLogger(level: string, flushMs = 0): Logger {
  const destination = pino.destination({ dest: 1, sync: false, maxLength: MAX_BUFFERED });
  const batcher = new Batcher(destination, flushMs);
  if (flushMs > 0) flushOnExit(batcher);
  const log = pino({ level, base: { service: 'casket' }, timestamp: pino.stdTimeFunctions.isoTime }, batcher);
  let dropped = 0;
  destination.on('drop', (data: unknown) => (dropped += lines(data)));
  // 'drain': what waited has been written, so the reader is back.
  destination.on('drain', () => {
    if (dropped === 0) return;
    log.warn({ dropped }, 'log lines dropped: stdout was not read while 16 MiB of them waited');
    dropped = 0;
  });
  return log;
}
