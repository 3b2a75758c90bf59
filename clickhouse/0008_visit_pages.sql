-- Each visit's pageviews as one array of (time, path), so the behaviour flow reads a row per
-- visit instead of grouping the window's pageviews by visit (lib/query/compile/flow.ts). The
-- arrays of a visit's rows are concatenated as parts merge; readers read FINAL (or group by
-- session_id), so rows not yet merged never split a visit. The order inside an array is the
-- order rows were merged in: readers sort it. The set index of site ids lets FINAL skip a part's
-- granule that only spans the site between two others: without it, such a granule overlaps every
-- row of the site, and FINAL merged them all.
CREATE TABLE IF NOT EXISTS visit_pages {{on_cluster}} (
  site_id UUID,
  session_start DateTime64(3, 'UTC'),
  session_id UInt64,
  pages SimpleAggregateFunction(groupArrayArray, Array(Tuple(DateTime64(3, 'UTC'), String))),
  INDEX site_ids site_id TYPE set(100) GRANULARITY 1
)
ENGINE = {{replicated}}AggregatingMergeTree
PARTITION BY toYYYYMM(session_start)
ORDER BY (site_id, toDate(session_start), session_id);

CREATE MATERIALIZED VIEW IF NOT EXISTS visit_pages_mv {{on_cluster}} TO visit_pages AS
SELECT site_id, session_start, session_id, groupArray((timestamp, pathname)) AS pages
FROM events
WHERE name = 'pageview'
GROUP BY site_id, session_start, session_id;

-- the pageviews stored before this migration; one inserted while it runs may be counted twice,
-- which a reader cannot tell from a reload and collapses as one (same time, same path). In the
-- table's order, so the parts it writes hold disjoint ranges of visits and FINAL has nothing
-- to merge across them.
INSERT INTO visit_pages
SELECT site_id, session_start, session_id, groupArray((timestamp, pathname)) AS pages
FROM events
WHERE name = 'pageview'
GROUP BY site_id, session_start, session_id
ORDER BY site_id, toDate(session_start), session_id;
