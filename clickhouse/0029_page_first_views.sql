-- Each page's first pageview ever, per site, for the launches read (lib/reports/why/compile.ts,
-- launchedPagesSql): a page launched in a window is one whose first pageview falls in it, and
-- finding that by reading every pageview of the site's history grew with the history (14× from 1M
-- to 30M events). A view keeps the earliest pageview of each (site, path) as events arrive; the
-- read takes the minimum over the rows not merged yet. A minimum is the same however often a row
-- is counted, so the backfill below may overlap rows inserted while it runs.
CREATE TABLE IF NOT EXISTS page_first_views {{on_cluster}} (
  site_id UUID,
  pathname String,
  first_view SimpleAggregateFunction(min, DateTime64(3, 'UTC'))
)
ENGINE = {{replicated}}AggregatingMergeTree
ORDER BY (site_id, pathname);

CREATE MATERIALIZED VIEW IF NOT EXISTS page_first_views_mv {{on_cluster}} TO page_first_views AS
SELECT site_id, pathname, min(timestamp) AS first_view
FROM events
WHERE kind = 'pageview'
GROUP BY site_id, pathname;

INSERT INTO page_first_views
SELECT site_id, pathname, min(timestamp) AS first_view
FROM events
WHERE kind = 'pageview'
GROUP BY site_id, pathname;
