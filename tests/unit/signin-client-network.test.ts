import { expect, it } from 'vitest'
import { clientNetwork } from '../../lib/accounts/signin'

it('counts sign-in requests per IPv4 address and per IPv6 /64, however the address is written', () => {
  expect(clientNetwork('203.0.113.7')).toBe('203.0.113.7')
  expect(clientNetwork('::ffff:203.0.113.7')).toBe('203.0.113.7')
  for (const address of [
    '2001:db8:a:b::1',
    '2001:DB8:A:B:ffff:ffff:ffff:ffff',
    '2001:0db8:000a:000b:1:2:3:4',
    '2001:db8:a:b::ffff:1.2.3.4',
  ])
    expect(clientNetwork(address), address).toBe('2001:db8:a:b::/64')
  expect(clientNetwork('2001:db8:a:c::1')).toBe('2001:db8:a:c::/64')
  expect(clientNetwork('::1')).toBe('0:0:0:0::/64')
  expect(clientNetwork('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
  expect(clientNetwork('2001:db8::')).toBe('2001:db8:0:0::/64')
  // not an address: counted as it is written
  expect(clientNetwork('not:an:address')).toBe('not:an:address')
  expect(clientNetwork('1::2::3')).toBe('1::2::3')
  expect(clientNetwork('')).toBe('')
})
