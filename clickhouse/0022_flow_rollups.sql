-- The behaviour flow's rollup of each finished site-local day (lib/reports/query/compile/flow.ts):
-- per day, anchor, step and page, the visits there, those that left there, those whose page
-- sequence begins there, and the pages they went on to with their visits. The anchor is
-- '(entry)' for the landing page, or a path for a visit's first view of that page; steps run
-- as far as a flow can show either side of it. A row of anchor '(built)' marks the day built.
-- A flow over whole days ranks each step's pages from its days' rows and reads the links of the
-- pages it keeps only (the order puts a page's days together, and small granules let the read
-- skip the other pages' links), instead of sorting every visit's
-- pageviews; the days not rolled up (today) it reads from visit_pages. Rows are stamped with the
-- day's signature and the rollup version, as day_rollups' are: reads use a day's rows only while
-- both still match. Filled by the rollup refresh, which builds every finished day that has no
-- rows at its current signature (on a database that already holds events, the first refresh
-- after this migration builds them all).
CREATE TABLE IF NOT EXISTS flow_rollups {{on_cluster}} (
  site_id UUID,
  timezone LowCardinality(String),
  version UInt16,
  anchor String,
  step Int8,
  path String,
  day Date,
  day_events UInt64,
  day_sum UInt64,
  visits UInt64,
  exits UInt64,
  opens UInt64,
  outs Array(Tuple(next_path String, visits UInt64))
)
ENGINE = {{replicated}}ReplacingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, timezone, version, anchor, step, path, day, day_events, day_sum)
SETTINGS index_granularity = 128;
