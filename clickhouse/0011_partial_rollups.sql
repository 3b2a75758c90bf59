-- The rollup of today's earlier visits (lib/rollup/partial.ts). Finished days come from
-- day_rollups; today was read whole from events, which late in a busy day is most of a read's
-- cost. Every few refreshes, the visits of today that began before a cutoff (a quarter hour,
-- before which every visit has ended) are rolled up here, per property and value as day_rollups
-- holds them, with visitors as a uniqExact state: a visitor can come back after the cutoff, so
-- visitor counts merge as sets, while visits, views, bounces and durations add up. Reads take
-- those rows and only the visits begun since the cutoff from events.
--
-- Each build is stamped with its cutoff and the signature (event count, session-id sum) of the
-- visits begun before it, from visit_quarters below: a late event of an earlier visit (a journal
-- replay, an import) changes the signature, and reads go back to events until the next build.
-- Builds are a cache: rows expire three hours after they were built (reads use builds under two
-- hours old), so only the last few builds of a site are kept.
CREATE TABLE IF NOT EXISTS partial_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  property LowCardinality(String),
  day Date,
  began_before DateTime('UTC'),
  part_events UInt64,
  part_sum UInt64,
  value String,
  visitors AggregateFunction(uniqExact, UInt64),
  visits UInt64,
  pageviews UInt64,
  events UInt64,
  bounces UInt64,
  duration_ms UInt64,
  reports UInt64,
  scroll_sum UInt64,
  engaged_ms_sum UInt64,
  built_at DateTime('UTC') DEFAULT now()
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, property, day, began_before, part_events, part_sum, value)
TTL built_at + INTERVAL 3 HOUR DELETE
SETTINGS merge_with_ttl_timeout = 1800;

-- Event counts per site and the quarter hour their visit began in: the signature of a day's visits
-- begun before a cutoff, as event_quarters is of a day's events. Filled from now on, and for the
-- visits of the last two days, which are all a partial rollup can be about.
CREATE TABLE IF NOT EXISTS visit_quarters {{on_cluster}} (
  site_id UUID,
  quarter DateTime('UTC'),
  events UInt64,
  session_sum UInt64
)
ENGINE = {{replicated}}SummingMergeTree
PARTITION BY toYYYYMM(quarter)
ORDER BY (site_id, quarter);

CREATE MATERIALIZED VIEW IF NOT EXISTS visit_quarters_mv {{on_cluster}} TO visit_quarters AS
SELECT site_id, toStartOfFifteenMinutes(session_start) AS quarter, count() AS events, sum(session_id) AS session_sum
FROM events
GROUP BY site_id, quarter;

INSERT INTO visit_quarters
SELECT site_id, toStartOfFifteenMinutes(session_start) AS quarter, count() AS events, sum(session_id) AS session_sum
FROM events
WHERE timestamp >= now() - INTERVAL 2 DAY
GROUP BY site_id, quarter;

-- The events of the last two days in time order, for the later visits a read takes from events
-- beside a partial rollup: events are ordered by day, name and visitor, so the last hour's events
-- are spread over every granule of the day, while here they are one range. The same columns as
-- events (a column added to events is added here too; a test compares them), and when each row
-- arrived: rows leave two days after they arrived, whatever time they are about.
CREATE TABLE IF NOT EXISTS recent_events {{on_cluster}} AS events
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (site_id, timestamp);

ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS inserted_at DateTime('UTC') DEFAULT now();

ALTER TABLE recent_events {{on_cluster}} MODIFY TTL inserted_at + INTERVAL 2 DAY DELETE;

CREATE MATERIALIZED VIEW IF NOT EXISTS recent_events_mv {{on_cluster}} TO recent_events AS
SELECT * FROM events;

INSERT INTO recent_events
SELECT *, now() FROM events
WHERE timestamp >= now() - INTERVAL 2 DAY;
