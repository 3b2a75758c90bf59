-- A page's errors, read as its other events are: the projection of events by site, path and time
-- (0021) now also holds the columns of the errors read (an error's group, name and message, and the
-- browser), which the page detail runs for one page. That read scanned every error event of the
-- window's days to find the page's few. A projection's columns cannot be changed in place: it is
-- dropped and added again with them, then rebuilt for the existing parts (a mutation, as in 0021).
-- Until that ends, reads take the table itself, which answers the same.
ALTER TABLE events {{on_cluster}} DROP PROJECTION IF EXISTS events_by_path SETTINGS mutations_sync = 2;
ALTER TABLE events {{on_cluster}} ADD PROJECTION IF NOT EXISTS events_by_path (
  SELECT site_id, pathname, timestamp, name, kind, session_id, visitor_id, referrer_source, channel, scroll_depth, engaged_ms,
         error_fingerprint, error_name, error_message, browser
  ORDER BY site_id, pathname, timestamp
);
ALTER TABLE events {{on_cluster}} MATERIALIZE PROJECTION events_by_path SETTINGS mutations_sync = 2;
