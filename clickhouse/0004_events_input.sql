-- The collector inserts into events_input, never into events directly: a Null table with the
-- columns of events, plain String where events has LowCardinality(String). Its view moves each
-- inserted block into events, and the conversion to LowCardinality then runs a whole column at
-- a time; parsing text straight into LowCardinality columns, value by value, made the embedded
-- engine's insert about a third dearer. Nothing is stored here; the views on events
-- (sessions_mv, event_quarters_mv) fire as before. A column added to events is added here too
-- (a test compares the two).
CREATE TABLE IF NOT EXISTS events_input {{on_cluster}} (
  site_id UUID,
  timestamp DateTime64(3, 'UTC'),
  name String,
  kind String,
  visitor_id UInt64,
  session_id UInt64,
  session_start DateTime64(3, 'UTC'),
  hostname String,
  pathname String,
  query String,
  referrer String,
  referrer_source String,
  referrer_medium String,
  channel String,
  utm_source String,
  utm_medium String,
  utm_campaign String,
  utm_term String,
  utm_content String,
  country_code String,
  region String,
  city String,
  latitude Float32,
  longitude Float32,
  browser String,
  browser_version String,
  os String,
  os_version String,
  device String,
  screen_class String,
  props Map(String, String),
  revenue_amount Decimal64(4),
  revenue_currency String,
  collection_source String,
  link_url String,
  selector String,
  element_text String,
  element_tag String,
  interactive UInt8,
  dead_click UInt8,
  error_fingerprint UInt64,
  error_name String,
  error_message String,
  vital_name String,
  vital_value Float64,
  engaged_ms UInt32,
  scroll_depth UInt8
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS events_input_mv {{on_cluster}} TO events AS
SELECT * FROM events_input;
