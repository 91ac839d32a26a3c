/** The event log of `--state memory` (log.ts): an array in this process, ids 1, 2, 3… */
import { AppendSignal, integerSequencer, MAX_EVENTS, type EventLog, type EventPage } from './log.js';
import { LoggedEvent, type StoredRecord } from './record.js';

export class MemoryEventLog implements EventLog {
  private events: Array<{ id: number; record: StoredRecord }> = [];
  private next = 1;
  private readonly signal = new AppendSignal();
  private readonly cursors = new Map<string, string>();

  constructor(private readonly maxEvents = MAX_EVENTS) {}

  async append(record: StoredRecord): Promise<void> {
    this.events.push({ id: this.next++, record });
    // Trimmed in slices, not per append: a shift per write would copy the array each time.
    if (this.events.length > this.maxEvents + 1024) this.events = this.events.slice(-this.maxEvents);
    this.signal.emit();
  }

  async read(after: string, limit: number): Promise<EventPage> {
    const cursor = Number(after);
    const oldest = this.events[0]?.id ?? this.next;
    // A cursor ahead of the log is one from another log (a restart): what it missed is unknown.
    const lost = cursor + 1 < oldest || cursor >= this.next;
    const from = lost ? (cursor >= this.next ? this.events.length : 0) : Math.max(0, cursor + 1 - oldest);
    const events = this.events.slice(from, from + limit).map((e) => new LoggedEvent(String(e.id), e.record, integerSequencer(e.id)));
    return { events, lost };
  }

  async head(): Promise<string> {
    return String(this.next - 1);
  }

  validId(id: string): boolean {
    return /^\d{1,15}$/.test(id);
  }

  onAppend(listener: () => void): () => void {
    return this.signal.on(listener);
  }

  async getCursor(target: string): Promise<string | undefined> {
    return this.cursors.get(target);
  }

  async setCursor(target: string, id: string): Promise<void> {
    this.cursors.set(target, id);
  }

  async lease(): Promise<boolean> {
    return true;
  }

  async close(): Promise<void> {}
}
