-- A filtered flow's rows in flow_rollups (anchor 'filters:<hash>:flow:<anchor>', built on the first
-- read of its filters, lib/reports/rollup/flow.ts) hold the finished days of a filter someone asked
-- for once: like the filtered rows of day_rollups (migration 0007) they are a cache, and expire 30
-- days after they were built. The day's marker row is written a day older than its cells, so it
-- expires first and a day is never marked built without them. The refresh's own rows never expire.
ALTER TABLE flow_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS built_at DateTime('UTC') DEFAULT now();
ALTER TABLE flow_rollups {{on_cluster}} MODIFY TTL built_at + INTERVAL 30 DAY DELETE WHERE startsWith(anchor, 'filters:');
