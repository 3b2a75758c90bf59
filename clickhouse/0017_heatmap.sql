-- Where a click landed, for the heatmap read: the position in ten-thousandths of the document's
-- width and height (0 to 10000, exact integers so grid cells never depend on float rounding) and
-- the document's size in CSS pixels; rage_click marks the click that made
-- three on one spot within a second. viewport_class is the width class of the viewport a hit was
-- sent from (phone, tablet, desktop), on every event, so clicks and engagement reports split by
-- it alike. Rows stored before these columns have no position (doc_width 0) and no class ('').
-- New columns go to events, events_input (plain String, see 0004) and recent_events in one order,
-- before recent_events' inserted_at: the views copy rows by name, and a test compares the three.
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS click_x UInt16 DEFAULT 0;
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS click_y UInt16 DEFAULT 0;
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_width UInt32 DEFAULT 0;
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_height UInt32 DEFAULT 0;
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS rage_click UInt8 DEFAULT 0;
ALTER TABLE events {{on_cluster}} ADD COLUMN IF NOT EXISTS viewport_class LowCardinality(String) DEFAULT '';
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS click_x UInt16 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS click_y UInt16 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_width UInt32 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_height UInt32 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS rage_click UInt8 DEFAULT 0;
ALTER TABLE events_input {{on_cluster}} ADD COLUMN IF NOT EXISTS viewport_class String DEFAULT '';
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS click_x UInt16 DEFAULT 0 AFTER scroll_depth;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS click_y UInt16 DEFAULT 0 AFTER click_x;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_width UInt32 DEFAULT 0 AFTER click_y;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS doc_height UInt32 DEFAULT 0 AFTER doc_width;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS rage_click UInt8 DEFAULT 0 AFTER doc_height;
ALTER TABLE recent_events {{on_cluster}} ADD COLUMN IF NOT EXISTS viewport_class LowCardinality(String) DEFAULT '' AFTER rage_click;
