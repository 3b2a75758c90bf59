-- The behaviour flow's cells of each finished site-local day (lib/reports/query/compile/flow-rollup.ts):
-- per day and anchor, the visits that went from a page at a step to the next page ('' where the
-- visit left), for every step a flow can show. The anchor is '(entry)' for the landing page, or a
-- path for a visit's first view of that page; the row of anchor '(built)' marks the day built.
-- A flow over whole days sums its finished days' cells instead of sorting every visit's
-- pageviews, and reads only the days not rolled up (today) from visit_pages. Rows are stamped
-- with the day's signature and the rollup version, as day_rollups' are: reads use a day's rows
-- only while both still match. Filled by the rollup refresh, which builds every finished day
-- that has no rows at its current signature (on a database that already holds events, the first
-- refresh after this migration builds them all).
CREATE TABLE IF NOT EXISTS flow_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  anchor String,
  day Date,
  day_events UInt64,
  day_sum UInt64,
  step Int8,
  path String,
  next_path String,
  visits UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, anchor, day, day_events, day_sum, step, path, next_path);
