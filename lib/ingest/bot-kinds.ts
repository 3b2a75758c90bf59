/** The kinds of bot the collector tells apart (lib/ingest/bots.ts), the values of the bot_kind dimension. */
export const BOT_KINDS = [
  'ai-training',
  'ai-assistant',
  'ai-search',
  'search-engine',
  'seo',
  'monitoring',
  'social-preview',
  'feed-reader',
  'other',
] as const
export type BotKind = (typeof BOT_KINDS)[number]
