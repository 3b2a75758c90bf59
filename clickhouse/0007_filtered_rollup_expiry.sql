-- Rows a filtered read rolled up (property 'filters:<hash>[:<property>]', lib/query/run.ts) hold
-- the finished days of a filter someone asked for once. Every distinct filter adds rows, so they
-- are a cache, not a record: they expire 30 days after they were built, and the next read with the
-- same filter builds its days again. The daily rollup's own rows never expire.
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS built_at DateTime('UTC') DEFAULT now();
ALTER TABLE day_rollups {{on_cluster}} MODIFY TTL built_at + INTERVAL 30 DAY DELETE WHERE startsWith(property, 'filters:');
