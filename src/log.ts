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
 * What waits for a stalled reader is kept in memory up to MAX_BUFFERED; past
 * that, lines are dropped rather than memory grown without bound, and
 * casket logs how many once the reader is back.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** Log bytes held for a reader that stopped reading, before lines are dropped. */
const MAX_BUFFERED = 16 * 1024 * 1024;

export function createLogger(level: string): Logger {
  const destination = pino.destination({ dest: 1, sync: false, maxLength: MAX_BUFFERED });
  const log = pino({ level, base: { service: 'casket' }, timestamp: pino.stdTimeFunctions.isoTime }, destination);
  let dropped = 0;
  destination.on('drop', () => dropped++);
  // 'drain': what waited has been written, so the reader is back.
  destination.on('drain', () => {
    if (dropped === 0) return;
    log.warn({ dropped }, 'log lines dropped: stdout was not read while 16 MiB of them waited');
    dropped = 0;
  });
  return log;
}
