-- The channel of visits an AI assistant sent was named `AI`; it is `AI assistants` now
-- (lib/ingest/ai-assistants.ts). Stored rows carry the channel's name: rename it in events, their
-- two-day copy and the sessions rollup. Mutations run in the background unless asked to wait:
-- these wait until every part is rewritten. Filters that still name `AI` read the new name
-- (lib/reports/query/parse.ts).
ALTER TABLE events {{on_cluster}} UPDATE channel = 'AI assistants' WHERE channel = 'AI' SETTINGS mutations_sync = 2;
ALTER TABLE recent_events {{on_cluster}} UPDATE channel = 'AI assistants' WHERE channel = 'AI' SETTINGS mutations_sync = 2;
ALTER TABLE sessions {{on_cluster}} UPDATE channel = 'AI assistants' WHERE channel = 'AI' SETTINGS mutations_sync = 2;

-- The daily and partial rollups hold the channel as a row's value, part of their sorting key, which
-- a mutation cannot change. The renaming leaves the signature of every day as it was, so the rolled
-- rows stay in use: copy each `AI` row of a channel breakdown (the unfiltered one, `channel`, and the
-- filtered ones, `filters:<hash>:channel`) under the new name, then delete the old rows. The copy
-- selects from a subquery: in the outer query `value` would name the replaced value.
INSERT INTO day_rollups
SELECT * REPLACE ('AI assistants' AS value)
FROM (SELECT * FROM day_rollups WHERE value = 'AI' AND (property = 'channel' OR endsWith(property, ':channel')));
ALTER TABLE day_rollups {{on_cluster}} DELETE WHERE value = 'AI' AND (property = 'channel' OR endsWith(property, ':channel')) SETTINGS mutations_sync = 2;

INSERT INTO partial_rollups
SELECT * REPLACE ('AI assistants' AS value)
FROM (SELECT * FROM partial_rollups WHERE value = 'AI' AND (property = 'channel' OR endsWith(property, ':channel')));
ALTER TABLE partial_rollups {{on_cluster}} DELETE WHERE value = 'AI' AND (property = 'channel' OR endsWith(property, ':channel')) SETTINGS mutations_sync = 2;
