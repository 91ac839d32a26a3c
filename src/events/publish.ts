/**
 * The write path's side of the events (docs/design.md §9): s3/write.ts and
 * the guard's refusal report hand over a WriteNotice once the write has
 * landed (or the refusal is answered); this appends its record to the event
 * log. Awaited by the write, so an acknowledged write's event is in the log
 * (webhooks deliver it at least once, even after a restart), but it never
 * fails one: the write has happened, a log that cannot take the event is an
 * error line.
 */
import type { Logger } from '../log.js';
import type { EventSink, WriteNotice } from '../s3/context.js';
import type { EventLog } from './log.js';
import { recordOf } from './record.js';

export class EventPublisher implements EventSink {
  constructor(private readonly log: EventLog, private readonly region: string, private readonly logger: Pick<Logger, 'error'>) {}

  async publish(notice: WriteNotice): Promise<void> {
    try {
      await this.log.append(recordOf(notice, this.region));
    } catch (err) {
      this.logger.error({ err, bucket: notice.bucket, key: notice.key, requestId: notice.requestId }, 'event not recorded in the event log');
    }
  }
}
