-- The leave-time engagement reports of a page, rolled up with its daily row (property 'path'):
-- how many reports, and the sums of their scroll depth (percent) and engaged time (ms), so the
-- pages read takes a page's average scroll depth and time on page from the rollup instead of
-- scanning every report of the window. Rows of other properties hold zeros. Rows built before
-- these columns existed are of an earlier rollup version, which reads no longer use.
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS reports UInt64 DEFAULT 0;
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS scroll_sum UInt64 DEFAULT 0;
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS engaged_ms_sum UInt64 DEFAULT 0;
