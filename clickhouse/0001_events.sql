-- Every collected hit of a human visitor: pageviews, custom events and the collector's own
-- kinds (click, error, vital, engagement, form, outbound, download, affiliate).
-- Visitor and visit ids are assigned at ingestion; session_start is the
-- visit's first timestamp, carried on each event so that visits partition consistently.
CREATE TABLE IF NOT EXISTS events {{on_cluster}} (
  site_id UUID,
  timestamp DateTime64(3, 'UTC'),
  name LowCardinality(String),
  kind LowCardinality(String),
  visitor_id UInt64,
  session_id UInt64,
  session_start DateTime64(3, 'UTC'),
  hostname LowCardinality(String),
  pathname String,
  query String,
  referrer String,
  referrer_source LowCardinality(String),
  referrer_medium LowCardinality(String),
  channel LowCardinality(String),
  utm_source String,
  utm_medium String,
  utm_campaign String,
  utm_term String,
  utm_content String,
  country_code LowCardinality(String),
  region LowCardinality(String),
  city String,
  latitude Float32,
  longitude Float32,
  browser LowCardinality(String),
  browser_version LowCardinality(String),
  os LowCardinality(String),
  os_version LowCardinality(String),
  device LowCardinality(String),
  screen_class LowCardinality(String),
  props Map(LowCardinality(String), String),
  revenue_amount Decimal64(4),
  revenue_currency LowCardinality(String),
  collection_source LowCardinality(String),
  link_url String,
  selector String,
  element_text String,
  element_tag LowCardinality(String),
  interactive UInt8,
  dead_click UInt8,
  error_fingerprint UInt64,
  error_name LowCardinality(String),
  error_message String,
  vital_name LowCardinality(String),
  vital_value Float64,
  engaged_ms UInt32,
  scroll_depth UInt8
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (site_id, toDate(timestamp), name, visitor_id, timestamp);

-- Bot and AI-crawler hits, kept apart from human traffic: server-side collection,
-- and browser hits flagged as bots on sites whose includeBots setting keeps them.
CREATE TABLE IF NOT EXISTS bot_events {{on_cluster}} (
  site_id UUID,
  timestamp DateTime64(3, 'UTC'),
  bot_name LowCardinality(String),
  bot_kind LowCardinality(String),
  verified UInt8,
  collection_source LowCardinality(String),
  hostname LowCardinality(String),
  pathname String,
  referrer String,
  user_agent String,
  country_code LowCardinality(String)
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(timestamp)
ORDER BY (site_id, toDate(timestamp), bot_kind, bot_name, timestamp);
