-- Imported aggregates: what an outside analytics product reported (GA4 today, other products'
-- histories later), per site, source, dataset and property-local day (and hour, for the hourly
-- dataset), one row per combination of the dataset's dimension values. A column the dataset does
-- not have is ''. A re-import of a day writes its rows with a newer version and then deletes the
-- day's older ones, so the newest import of a day is what reads see (reads use FINAL, which also
-- folds a page stored twice by an import that resumed after a crash).
CREATE TABLE IF NOT EXISTS imported_aggregates {{on_cluster}} (
  site_id UUID,
  source LowCardinality(String),
  dataset LowCardinality(String),
  date Date,
  hour UInt8,
  source_name String,
  referrer String,
  channel LowCardinality(String),
  utm_source String,
  utm_medium String,
  utm_campaign String,
  utm_content String,
  utm_term String,
  hostname String,
  path String,
  entry_page String,
  country LowCardinality(String),
  region String,
  city String,
  device LowCardinality(String),
  browser LowCardinality(String),
  os LowCardinality(String),
  event String,
  visitors UInt64,
  visits UInt64,
  engaged_visits UInt64,
  pageviews UInt64,
  engagement_seconds Float64,
  events UInt64,
  version UInt64
)
ENGINE = {{replicated}}ReplacingMergeTree(version)
PARTITION BY toYYYYMM(date)
ORDER BY (site_id, source, dataset, date, hour, source_name, referrer, channel, utm_source, utm_medium, utm_campaign,
  utm_content, utm_term, hostname, path, entry_page, country, region, city, device, browser, os, event);
