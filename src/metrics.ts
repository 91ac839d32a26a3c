/**
 * Prometheus metrics at /_casket/metrics (docs/design.md §5): requests by operation
 * and status, refusals (412/428) by reason and whether enforced, policy
 * refusals (403 AccessDenied) by reason and action, bytes in and
 * out, request and upstream latency. prom-client is the maintained Prometheus
 * client for Node; one registry per server so tests can run several.
 * casket_retained_bytes: the content kept of versions agents saw (docs/design.md §6),
 * read from the retention store at each scrape (shared, with Redis).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'casket_requests_total', help: 'S3 requests by operation and HTTP status', labelNames: ['operation', 'status'] as const, registers: [this.registry] });
  readonly refusals = new Counter({ name: 'casket_refusals_total', help: 'Writes refused (or, in observe mode, that would have been) by reason', labelNames: ['reason', 'enforced'] as const, registers: [this.registry] });
  readonly accessDenied = new Counter({ name: 'casket_access_denied_total', help: 'Requests (or DeleteObjects keys) a credential policy refused, by reason and action', labelNames: ['reason', 'action'] as const, registers: [this.registry] });
  readonly bytesReceived = new Counter({ name: 'casket_bytes_received_total', help: 'Request body bytes received', registers: [this.registry] });
  readonly bytesSent = new Counter({ name: 'casket_bytes_sent_total', help: 'Response bytes sent', registers: [this.registry] });
  readonly duration = new Histogram({ name: 'casket_request_duration_seconds', help: 'Time to the end of the response, by operation', labelNames: ['operation'] as const, buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60], registers: [this.registry] });
  readonly upstream = new Histogram({ name: 'casket_upstream_duration_seconds', help: 'Upstream S3 request latency, by method', labelNames: ['method'] as const, buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60], registers: [this.registry] });

  /** Webhook deliveries (docs/design.md §9, events/webhooks.ts) by target name: delivered, attempts that failed, events given up on. */
  readonly webhookPushed = new Counter({ name: 'casket_webhook_pushed_total', help: 'Event records a webhook target acknowledged (2xx)', labelNames: ['target'] as const, registers: [this.registry] });
  readonly webhookFailed = new Counter({ name: 'casket_webhook_failed_total', help: 'Webhook delivery attempts that failed (no answer in time, or not 2xx)', labelNames: ['target'] as const, registers: [this.registry] });
  readonly webhookDropped = new Counter({ name: 'casket_webhook_dropped_total', help: 'Event records dropped after the last delivery attempt', labelNames: ['target'] as const, registers: [this.registry] });

  /** Where casket_retained_bytes is read from at each scrape. */
  retainedBytes: () => Promise<number> = async () => 0;
  readonly retained = new Gauge({
    name: 'casket_retained_bytes',
    help: 'Bytes kept of the versions agents read or wrote, for diffs and merges (budget: --retain-bytes)',
    registers: [this.registry],
    collect: async () => {
      this.retained.set(await this.retainedBytes().catch(() => 0));
    },
  });

  /** Where casket_multipart_incomplete_bytes is read from at each scrape (embedded store only). */
  incompleteUploadBytes: () => number = () => 0;
  readonly incompleteUploads = new Gauge({
    name: 'casket_multipart_incomplete_bytes',
    help: 'Bytes held by the parts of multipart uploads not completed nor aborted (embedded store; see --multipart-abandon-after)',
    registers: [this.registry],
    collect: () => {
      this.incompleteUploads.set(this.incompleteUploadBytes());
    },
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
