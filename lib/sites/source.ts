/** The sources a site reads from: the first-party collector, and Google Analytics 4 data imported into it. */
export const SOURCES = ['standalone', 'ga4'] as const
export type Source = (typeof SOURCES)[number]
