-- Places in the daily rollup (properties 'geo:region' and 'geo:city', lib/query/compile/geo.ts):
-- per day and place, visitors and visits as every row, plus the visits that have coordinates and
-- the sums of their latitude and longitude, so the geo read takes finished days from the rollup
-- and a place's mean coordinates stay exact. Rows of other properties hold zeros. Reads use only
-- rows of the current rollup version, which carries these.
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS located UInt64 DEFAULT 0;
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS lat_sum Float64 DEFAULT 0;
ALTER TABLE day_rollups {{on_cluster}} ADD COLUMN IF NOT EXISTS lon_sum Float64 DEFAULT 0;
