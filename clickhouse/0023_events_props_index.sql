-- Which events carry custom properties: a min-max index of each granule's largest property count,
-- length(props). Custom properties ride on a few kinds of event (custom events, and a vital's
-- attribution), and events are ordered by name within a day, so most granules hold none: the
-- properties read states `length(props) > 0` (lib/reports/query/compile/properties.ts), which
-- every event it counts meets, and the engine skips the granules whose largest count is 0 instead
-- of reading every event's map. The index is a few bytes a granule and is kept with each part
-- (inserts, merges, mutations); the parts stored before it are indexed here, as a mutation that
-- reads the props column once and rewrites no row.
ALTER TABLE events {{on_cluster}} ADD INDEX IF NOT EXISTS events_props_count length(props) TYPE minmax GRANULARITY 1;
ALTER TABLE events {{on_cluster}} MATERIALIZE INDEX events_props_count SETTINGS mutations_sync = 2;
