-- The errors read's rollup of each finished site-local day (lib/reports/query/compile/errors.ts):
-- per day and error group (grain 1) its occurrences, the visitors who ran into it that day, the
-- name and message of its latest occurrence with its first and last seen, and its pages and
-- browsers tallied (each value with its occurrences); and the day's row (grain 0): its errors and
-- the visitors who ran into one. The day's row is written last and marks the day built. Visitor
-- ids rotate at the site-local midnight, so a window of whole days has the sum of its days'
-- visitors, as day_rollups' do; a group's distinct pages and most frequent page and browser come
-- from its days' tallies summed. Rows are stamped with the day's signature and the rollup
-- version: reads use a day's rows only while both still match, and read the days not rolled up
-- (today, a day with a late error) from events. Filled by the rollup refresh, which builds every
-- finished day that has no rows at its current signature (on a database that already holds
-- events, the first refresh after this migration builds them all).
CREATE TABLE IF NOT EXISTS error_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  grain UInt8,
  day Date,
  day_events UInt64,
  day_sum UInt64,
  fingerprint UInt64,
  errors UInt64,
  visitors UInt64,
  error_name LowCardinality(String),
  message String,
  first_seen DateTime64(3, 'UTC'),
  last_seen DateTime64(3, 'UTC'),
  pages Map(String, UInt64),
  browsers Map(String, UInt64)
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, grain, day, day_events, day_sum, fingerprint);
