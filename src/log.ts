/**
 * JSON logs (pino): one line per request with its request id, plus start-up
 * and errors. pino because it is the fastest well-kept JSON logger for Node.
 *
 * Written synchronously to stdout, one write(2) per line, as Node itself
 * writes process.stdout to files and pipes on Linux
 * (https://nodejs.org/api/process.html#a-note-on-process-io). pino's default
 * destination writes through libuv's thread pool instead, and handing every
 * line to a pool thread and its completion back cost more than the write
 * itself: 3 futex calls per 4 KiB PutObject against 0.4 for a bare proxy,
 * and 9% of casket's CPU per PutObject in front of Ceph RGW (alternating
 * A/B, README Performance). A line is on its way before the next request is
 * read, and nothing buffered is lost when the process is killed.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'casket' }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ dest: 1, sync: true }));
}
