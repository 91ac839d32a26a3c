/**
 * A listing entry's LastModified is copied from the upstream's page only
 * when it is the text casket's writer gives for the same instant
 * (Date.prototype.toISOString); a date the calendar does not have (the 29th
 * of February of a common year, the 31st of April) is read as Date reads it
 * and written anew. src/backends/s3/listing-scan.ts tells them apart by
 * arithmetic on the digits; this holds it to what Date says.
 */
import { describe, expect, it } from 'vitest';
import { scanListing } from '../../../src/backends/s3/listing-xml.js';

const HEAD = '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>';
const entry = (key: string, date: string) => `<Contents><Key>${key}</Key><LastModified>${date}</LastModified><ETag>&quot;d41d8cd98f00b204e9800998ecf8427e&quot;</ETag><Size>0</Size><StorageClass>STANDARD</StorageClass></Contents>`;

/** Whether the writer writes this date back as it is. */
const canonical = (date: string) => {
  const d = new Date(date);
  return !Number.isNaN(d.getTime()) && d.toISOString() === date;
};

function copied(dates: string[]): boolean[] {
  const page = scanListing(`${HEAD}${dates.map((d, i) => entry(`k${i}`, d)).join('')}</ListBucketResult>`);
  expect(page).toBeDefined();
  return page!.spans.map((s) => s.lastModified >= 0);
}

describe('a listing date copied through', () => {
  it('only when it is a day the calendar has: leap years by the Gregorian rule, month lengths, the clock', () => {
    const dates = [
      '2024-02-29T10:00:00.000Z',
      '2026-02-29T10:00:00.000Z',
      '2000-02-29T00:00:00.000Z',
      '2100-02-29T00:00:00.000Z',
      '2026-04-31T00:00:00.000Z',
      '2026-04-30T23:59:59.999Z',
      '2026-11-29T19:39:42.067Z',
      '2026-12-31T23:59:59.999Z',
      '2026-13-01T00:00:00.000Z',
      '2026-00-10T00:00:00.000Z',
      '2026-11-00T00:00:00.000Z',
      '2026-11-29T24:00:00.000Z',
      '2026-11-29T23:60:00.000Z',
      '2026-11-29T23:59:60.000Z',
    ];
    expect(copied(dates)).toEqual(dates.map(canonical));
    expect(copied(dates).filter(Boolean)).toHaveLength(5);
  });

  it('agrees with Date on every day of four years, a leap year and a century among them', () => {
    const dates: string[] = [];
    for (const year of [1900, 2000, 2024, 2026]) {
      for (let month = 1; month <= 12; month++) {
        for (let day = 28; day <= 31; day++) dates.push(`${year}-${String(month).padStart(2, '0')}-${day}T12:00:00.000Z`);
      }
    }
    expect(copied(dates)).toEqual(dates.map(canonical));
  });
});
