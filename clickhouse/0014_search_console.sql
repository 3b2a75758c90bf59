-- Search Console's search analytics, imported per site and day (lib/integrations/search-console).
-- search_console_rows: one row per day, query, landing page, country and device as
-- searchAnalytics/query answers them (page is the full URL, path its path); position is Search
-- Console's mean position of those impressions, so a mean over rows weighs it by impressions.
-- search_console_totals: the same days asked without query and page. Search Console leaves out
-- anonymized queries from the query rows but not from the totals, so the rows of a day add up to
-- less than its totals: the totals answer "how much", the rows "which queries and pages".
-- A re-import of a day writes its rows with a newer version and then deletes the day's older
-- ones (as imported_aggregates does); reads use FINAL, which also folds a page stored twice by an
-- import that resumed after a crash.
CREATE TABLE IF NOT EXISTS search_console_rows {{on_cluster}} (
  site_id UUID,
  date Date,
  query String,
  page String,
  path String,
  country LowCardinality(String),
  device LowCardinality(String),
  clicks UInt64,
  impressions UInt64,
  position Float64,
  version UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree(version)
PARTITION BY toYYYYMM(date)
ORDER BY (site_id, date, path, query, page, country, device);

CREATE TABLE IF NOT EXISTS search_console_totals {{on_cluster}} (
  site_id UUID,
  date Date,
  country LowCardinality(String),
  device LowCardinality(String),
  clicks UInt64,
  impressions UInt64,
  position Float64,
  version UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree(version)
PARTITION BY toYYYYMM(date)
ORDER BY (site_id, date, country, device);
