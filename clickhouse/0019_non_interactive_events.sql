-- Custom events sent as non-interactive (Plausible's `i: false` / `interactive: false`, this
-- tracker's `svc(name, {interactive: false})`) are counted as events, conversions and everywhere
-- else, but do not make a visit engaged: a visit bounces when it has at most one pageview and no
-- interactive custom event. `non_interactive` is 1 on such an event and 0 on every other row (the
-- default, so rows stored before hold 0: they were all interactive). New columns go to events,
-- events_input (see 0004) and recent_events (before its inserted_at) in one order, as in 0017.
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS non_interactive UInt8 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS non_interactive UInt8 DEFAULT 0;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS non_interactive UInt8 DEFAULT 0 AFTER viewport_class;

-- The sessions rollup counts each visit's interactive custom events beside all of them, and reads
-- take bounces from it (lib/reports/query/compile/visits.ts). Parts written before this column
-- existed have no value stored: a read (and a merge) takes the default, the part's own custom
-- event count, which is exact since every event stored before was interactive; the view writes the
-- count itself from now on. The view's query is replaced in place (MODIFY QUERY, a plain statement
-- from ClickHouse 23.12), so no insert runs between two views or under none.
ALTER TABLE sessions {{on_cluster}} ADD COLUMN IF NOT EXISTS interactive_events SimpleAggregateFunction(sum, UInt64) DEFAULT custom_events;
ALTER TABLE sessions_mv {{on_cluster}} MODIFY QUERY
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
  countIf(kind = 'custom' AND non_interactive = 0) AS interactive_events,
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
