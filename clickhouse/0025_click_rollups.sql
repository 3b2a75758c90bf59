-- The clicks read's rollup of each finished site-local day (lib/reports/query/compile/clicks.ts):
-- per day, the clicks of each element (selector, text, tag, link) on each page (grain 2) with
-- its dead clicks and whether it was interactive; per element (grain 1) the same summed over its
-- pages and its visitors that day; and the day's row (grain 0): its clicks, dead clicks and the
-- visitors who clicked. The day's row is written last and marks the day built. Visitor ids
-- rotate at the site-local midnight, so a window of whole days has the sum of its days'
-- visitors, as day_rollups' do. Rows are stamped with the day's signature and the rollup
-- version: reads use a day's rows only while both still match, and read the days not rolled up
-- (today, a day with a late hit) from events. Filled by the rollup refresh, which builds every
-- finished day that has no rows at its current signature (on a database that already holds
-- events, the first refresh after this migration builds them all).
CREATE TABLE IF NOT EXISTS click_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  grain UInt8,
  day Date,
  day_events UInt64,
  day_sum UInt64,
  selector String,
  text String,
  tag LowCardinality(String),
  url String,
  pathname String,
  clicks UInt64,
  dead_clicks UInt64,
  interactive UInt8,
  visitors UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, grain, day, day_events, day_sum, selector, text, tag, url, pathname);
