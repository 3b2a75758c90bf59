-- One table of quarter-hour counts instead of two. event_quarters (0003) counted events by the
-- quarter hour of their time, visit_quarters (0011) by the quarter hour of their visit's start:
-- the same two sums (events, session-id sum) under a different key, each written by its own view,
-- so every insert into events wrote a part for each. One view now writes both into `quarters`, a
-- row per site and quarter hour with the events of that quarter (events, session_sum) and the
-- events of the visits begun in it (visit_events, visit_session_sum). A visit begins with its
-- first event, so most events fall in their visit's quarter and the two sums share a row. Readers
-- of the event counts take rows with events > 0, as the old table held only such rows.
--
-- Order, so nothing is counted twice: the old views stop first, then the new one starts, then the
-- old tables are copied in under fixed tokens (deduplicated if a failed run is repeated) and
-- dropped. An event stored on another node between the old views stopping and the new one
-- starting is not counted here: its day's signature then differs from its events', and reads take
-- that day from events until it is rolled up again.
DROP VIEW IF EXISTS event_quarters_mv {{on_cluster}};
DROP VIEW IF EXISTS visit_quarters_mv {{on_cluster}};

CREATE TABLE IF NOT EXISTS quarters {{on_cluster}} (
  site_id UUID,
  quarter DateTime('UTC'),
  events UInt64,
  session_sum UInt64,
  visit_events UInt64,
  visit_session_sum UInt64
)
ENGINE = {{replicated}}SummingMergeTree
PARTITION BY toYYYYMM(quarter)
ORDER BY (site_id, quarter)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE MATERIALIZED VIEW IF NOT EXISTS quarters_mv {{on_cluster}} TO quarters AS
SELECT
  site_id,
  q.1 AS quarter,
  countIf(q.2) AS events,
  sumIf(session_id, q.2) AS session_sum,
  countIf(NOT q.2) AS visit_events,
  sumIf(session_id, NOT q.2) AS visit_session_sum
FROM events
ARRAY JOIN [(toStartOfFifteenMinutes(timestamp), true), (toStartOfFifteenMinutes(session_start), false)] AS q
GROUP BY site_id, quarter;

-- the old tables, empty, when a repeated run finds them dropped already
CREATE TABLE IF NOT EXISTS event_quarters {{on_cluster}} (site_id UUID, quarter DateTime('UTC'), events UInt64, session_sum UInt64)
ENGINE = {{replicated}}SummingMergeTree ORDER BY (site_id, quarter);
CREATE TABLE IF NOT EXISTS visit_quarters {{on_cluster}} (site_id UUID, quarter DateTime('UTC'), events UInt64, session_sum UInt64)
ENGINE = {{replicated}}SummingMergeTree ORDER BY (site_id, quarter);

INSERT INTO quarters (site_id, quarter, events, session_sum)
SETTINGS insert_deduplication_token = '0030_quarters_events'
SELECT site_id, quarter, sum(events), sum(session_sum) FROM event_quarters GROUP BY site_id, quarter;

INSERT INTO quarters (site_id, quarter, visit_events, visit_session_sum)
SETTINGS insert_deduplication_token = '0030_quarters_visits'
SELECT site_id, quarter, sum(events), sum(session_sum) FROM visit_quarters GROUP BY site_id, quarter;

DROP TABLE IF EXISTS event_quarters {{on_cluster}};
DROP TABLE IF EXISTS visit_quarters {{on_cluster}};
