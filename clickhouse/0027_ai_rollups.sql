-- Bot hits per site and quarter hour, kept by a materialized view as event_quarters is for events:
-- a site-local day's bot hits are then counted from about a hundred rows, so the signature of a
-- rollup that reads bot_events (ai_rollups below) covers them and changes with a late crawler hit.
-- The timestamp sum makes it change with any added hit; it wraps at 2^64, which only has to be
-- consistent. Retried inserts are deduplicated as bot_events' are (migration 0015).
CREATE TABLE IF NOT EXISTS bot_quarters {{on_cluster}} (
  site_id UUID,
  quarter DateTime('UTC'),
  hits UInt64,
  time_sum UInt64
)
ENGINE = {{replicated}}SummingMergeTree
PARTITION BY toYYYYMM(quarter)
ORDER BY (site_id, quarter)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS bot_quarters_mv {{on_cluster}} TO bot_quarters AS
SELECT site_id, toStartOfFifteenMinutes(timestamp) AS quarter, count() AS hits, sum(toUInt64(toUnixTimestamp64Milli(timestamp))) AS time_sum
FROM bot_events
GROUP BY site_id, quarter;

INSERT INTO bot_quarters
SELECT site_id, toStartOfFifteenMinutes(timestamp) AS quarter, count() AS hits, sum(toUInt64(toUnixTimestamp64Milli(timestamp))) AS time_sum
FROM bot_events
GROUP BY site_id, quarter;

-- The AI visibility read's rollup of each finished site-local day (lib/reports/ai/rollup.ts): per
-- day, the AI crawler hits per page, crawler name, bot kind and whether the crawler was verified
-- (grain 1), the same per crawler alone (grain 3, path '') and per page alone (grain 4, bot_name
-- ''), each with its crawls of each purpose; and the visits the AI assistants sent (grain 2) per
-- first page viewed and the visit's source and utm_source. A crawler's company and a visit's are
-- not stored: reads derive them from these columns and the current lists
-- (lib/ingest/ai-assistants.ts), as they do from bot_events and events. A visit ends at the
-- site-local midnight, so a window of whole days has the sum of its days' visits, each on its
-- first page. A row of grain 0 per day, written last, marks the day built. Rows are stamped with
-- the day's signature (its events' and bot hits', and the listed crawlers' names and purposes,
-- which decide the hits kept and their purposes) and the rollup version: reads use a day's rows
-- only while both still match, and read the days not rolled up (today, a day with a late hit of
-- either kind) from events and bot_events. The order puts each crawler's rows together, so a read
-- of one company reads its crawlers' rows only. Filled by the rollup refresh, which builds every
-- finished day that has no rows at its current signature (on a database that already holds
-- events, the first refresh after this migration builds them all).
CREATE TABLE IF NOT EXISTS ai_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  grain UInt8,
  day Date,
  day_events UInt64,
  day_sum UInt64,
  path String,
  bot_name LowCardinality(String),
  bot_kind LowCardinality(String),
  verified UInt8,
  source LowCardinality(String),
  utm_source String,
  crawls UInt64,
  training UInt64,
  search UInt64,
  user UInt64,
  visits UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, grain, bot_name, bot_kind, verified, day, day_events, day_sum, path, source, utm_source);
