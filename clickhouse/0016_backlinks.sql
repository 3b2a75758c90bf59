-- Backlinks (lib/backlinks, docs/backlinks.md).
-- backlink_checks: every time the crawler read a referring page, one row per link to the site it
-- found there (outcome 'linked'), or one row with an empty target_url when it found none
-- ('unlinked'), the page was gone ('gone') or could not be read ('failed', which keeps the earlier
-- state). A page's state is its latest row that is not 'failed'.
CREATE TABLE IF NOT EXISTS backlink_checks {{on_cluster}} (
  site_id UUID,
  source_url String,
  checked_at DateTime64(3, 'UTC'),
  outcome LowCardinality(String),
  target_url String,
  anchor String,
  rel LowCardinality(String),
  image UInt8,
  title String,
  via LowCardinality(String),
  error String
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(checked_at)
ORDER BY (site_id, source_url, checked_at);

-- The links a provider listed for the site at fetched_at, with the referring domain's authority.
CREATE TABLE IF NOT EXISTS backlink_provider_links {{on_cluster}} (
  site_id UUID,
  fetched_at DateTime64(3, 'UTC'),
  source_url String,
  target_url String,
  anchor String,
  rel LowCardinality(String),
  image UInt8,
  title String,
  domain_authority Nullable(Float64),
  first_seen Nullable(DateTime64(3, 'UTC'))
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(fetched_at)
ORDER BY (site_id, fetched_at, source_url, target_url);

-- One row per snapshot taken (several a day: the day's snapshot is its latest), with its counts
-- and the site's authority from the provider when one is configured.
CREATE TABLE IF NOT EXISTS backlink_days {{on_cluster}} (
  site_id UUID,
  day Date,
  taken_at DateTime64(3, 'UTC'),
  links UInt32,
  domains UInt32,
  dofollow UInt32,
  nofollow UInt32,
  ugc UInt32,
  sponsored UInt32,
  authority Nullable(Float64)
)
ENGINE = {{replicated}}MergeTree
ORDER BY (site_id, day, taken_at);

-- The link set of a snapshot: every live link (source page, target URL) with its attributes,
-- which source found it (discovered, provider, both) and the day it was first seen.
CREATE TABLE IF NOT EXISTS backlink_snapshots {{on_cluster}} (
  site_id UUID,
  day Date,
  taken_at DateTime64(3, 'UTC'),
  source_url String,
  target_url String,
  domain String,
  tld LowCardinality(String),
  anchor String,
  rel LowCardinality(String),
  image UInt8,
  title String,
  found_by LowCardinality(String),
  first_seen Date,
  domain_authority Nullable(Float64)
)
ENGINE = {{replicated}}MergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (site_id, day, taken_at, domain, source_url, target_url);

-- new, lost and regained links: a snapshot compared with the previous day's (as taken_at).
CREATE TABLE IF NOT EXISTS backlink_events {{on_cluster}} (
  site_id UUID,
  day Date,
  taken_at DateTime64(3, 'UTC'),
  kind LowCardinality(String),
  reason LowCardinality(String),
  source_url String,
  target_url String,
  domain String,
  anchor String,
  rel LowCardinality(String),
  found_by LowCardinality(String),
  new_domain UInt8,
  visits UInt32
)
ENGINE = {{replicated}}MergeTree
ORDER BY (site_id, day, taken_at, kind, source_url, target_url);
