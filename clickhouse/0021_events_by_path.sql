-- The events of one page, in order: a projection of events sorted by (site, path, time), with the
-- columns a page's own reads use (the page detail's daily series, its engagement and its first
-- pageview). The sort of events (site, day, name, visitor) spreads one page's events over every
-- granule of the site's days, so those reads scanned every event of the window to find one page's
-- few; the projection holds them in one range. The engine picks it for a statement it covers when
-- that reads less, and keeps it with each part (inserts, merges and mutations), so answers do not
-- change. It costs the listed columns once more on disk. Existing parts are rewritten with it, as
-- a mutation.
ALTER TABLE events {{on_cluster}} ADD PROJECTION IF NOT EXISTS events_by_path (
  SELECT site_id, pathname, timestamp, name, kind, session_id, visitor_id, referrer_source, channel, scroll_depth, engaged_ms
  ORDER BY site_id, pathname, timestamp
);
ALTER TABLE events {{on_cluster}} MATERIALIZE PROJECTION events_by_path SETTINGS mutations_sync = 2;
