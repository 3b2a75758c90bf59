-- Per-visit facts, so reports need not scan every event: an AggregatingMergeTree fed by a
-- materialized view from events. Rows of one visit merge in the background; readers always
-- GROUP BY session_id and finalize the aggregates, so unmerged parts never double count.
CREATE TABLE IF NOT EXISTS sessions {{on_cluster}} (
  site_id UUID,
  session_id UInt64,
  session_start DateTime64(3, 'UTC'),
  visitor_id SimpleAggregateFunction(any, UInt64),
  end SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
  entry_page AggregateFunction(argMin, String, DateTime64(3, 'UTC')),
  exit_page AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
  pageviews SimpleAggregateFunction(sum, UInt64),
  custom_events SimpleAggregateFunction(sum, UInt64),
  events SimpleAggregateFunction(sum, UInt64),
  hostname SimpleAggregateFunction(any, LowCardinality(String)),
  referrer SimpleAggregateFunction(any, String),
  referrer_source SimpleAggregateFunction(any, LowCardinality(String)),
  channel SimpleAggregateFunction(any, LowCardinality(String)),
  utm_source SimpleAggregateFunction(any, String),
  utm_medium SimpleAggregateFunction(any, String),
  utm_campaign SimpleAggregateFunction(any, String),
  utm_term SimpleAggregateFunction(any, String),
  utm_content SimpleAggregateFunction(any, String),
  country_code SimpleAggregateFunction(any, LowCardinality(String)),
  region SimpleAggregateFunction(any, LowCardinality(String)),
  city SimpleAggregateFunction(any, String),
  browser SimpleAggregateFunction(any, LowCardinality(String)),
  os SimpleAggregateFunction(any, LowCardinality(String)),
  device SimpleAggregateFunction(any, LowCardinality(String)),
  screen_class SimpleAggregateFunction(any, LowCardinality(String))
)
ENGINE = {{replicated}}AggregatingMergeTree
PARTITION BY toYYYYMM(session_start)
ORDER BY (site_id, toDate(session_start), session_id);

-- Visit-scoped attributes (source, UTM, geo, device) are those of the visit's first hit: the
-- collector stamps them on every event of the visit, so any() is exact.
CREATE MATERIALIZED VIEW IF NOT EXISTS sessions_mv {{on_cluster}} TO sessions AS
SELECT
  site_id,
  session_id,
  session_start,
  any(visitor_id) AS visitor_id,
  max(timestamp) AS end,
  argMinStateIf(pathname, timestamp, kind = 'pageview') AS entry_page,
  argMaxStateIf(pathname, timestamp, kind = 'pageview') AS exit_page,
  countIf(kind = 'pageview') AS pageviews,
  countIf(kind = 'custom') AS custom_events,
  count() AS events,
  any(hostname) AS hostname,
  any(referrer) AS referrer,
  any(referrer_source) AS referrer_source,
  any(channel) AS channel,
  any(utm_source) AS utm_source,
  any(utm_medium) AS utm_medium,
  any(utm_campaign) AS utm_campaign,
  any(utm_term) AS utm_term,
  any(utm_content) AS utm_content,
  any(country_code) AS country_code,
  any(region) AS region,
  any(city) AS city,
  any(browser) AS browser,
  any(os) AS os,
  any(device) AS device,
  any(screen_class) AS screen_class
FROM events
GROUP BY site_id, session_id, session_start;
