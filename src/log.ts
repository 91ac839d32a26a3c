/**
 * JSON logs (pino): one line per request with its request id, plus start-up
 * and errors. pino because it is the fastest well-kept JSON logger for Node
 * and writes asynchronously enough to stay off the hot path.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { service: 'casket' }, timestamp: pino.stdTimeFunctions.isoTime });
}
