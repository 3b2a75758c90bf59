-- Event counts per site and quarter hour, kept by a materialized view: the signature of a
-- site-local day (every UTC offset is a whole number of quarter hours) is read from about a
-- hundred rows instead of the day's events. The session-id sum makes the signature change with
-- any added event; it wraps at 2^64, which only has to be consistent, not meaningful.
CREATE TABLE IF NOT EXISTS event_quarters {{on_cluster}} (
  site_id UUID,
  quarter DateTime('UTC'),
  events UInt64,
  session_sum UInt64
)
ENGINE = {{replicated}}SummingMergeTree
PARTITION BY toYYYYMM(quarter)
ORDER BY (site_id, quarter);

CREATE MATERIALIZED VIEW IF NOT EXISTS event_quarters_mv {{on_cluster}} TO event_quarters AS
SELECT site_id, toStartOfFifteenMinutes(timestamp) AS quarter, count() AS events, sum(session_id) AS session_sum
FROM events
GROUP BY site_id, quarter;

INSERT INTO event_quarters
SELECT site_id, toStartOfFifteenMinutes(timestamp) AS quarter, count() AS events, sum(session_id) AS session_sum
FROM events
GROUP BY site_id, quarter;

-- The daily rollup (lib/query/rollup.ts): per site, site-local day, property ('' for the day's
-- totals) and value, the finished numbers of a breakdown, stamped with the signature (events,
-- session-id sum) of the day they were built from and the rollup version. Reads use a day's rows
-- only while both still match, and read them FINAL.
CREATE TABLE IF NOT EXISTS day_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  property LowCardinality(String),
  day Date,
  day_events UInt64,
  day_sum UInt64,
  value String,
  visitors UInt64,
  visits UInt64,
  pageviews UInt64,
  events UInt64,
  bounces UInt64,
  duration_ms UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, property, day, day_events, day_sum, value);
