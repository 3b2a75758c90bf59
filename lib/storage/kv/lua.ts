// fengari (MIT) is Lua 5.3 in JavaScript; it lets the embedded store run the scripts that
// `@upstash/ratelimit` sends, so `wrangler dev` can use the same limiter against it.
// @ts-expect-error fengari ships no type declarations
import { lauxlib, lua, lualib, to_luastring } from 'fengari'

type LuaState = unknown
export class LuaScriptError extends Error {}

function pushReply(L: LuaState, reply: unknown) {
  if (reply === null || reply === undefined) lua.lua_pushboolean(L, false)
  else if (typeof reply === 'number') Number.isInteger(reply) ? lua.lua_pushinteger(L, reply) : lua.lua_pushnumber(L, reply)
  else if (Array.isArray(reply)) {
    lua.lua_createtable(L, reply.length, 0)
    reply.forEach((item, i) => {
      pushReply(L, item)
      lua.lua_rawseti(L, -2, i + 1)
    })
  } else lua.lua_pushstring(L, to_luastring(String(reply)))
}

/** Lua value to a Redis reply, as Redis converts them: numbers truncate, false is nil, tables are arrays. */
function readReply(L: LuaState, index: number): unknown {
  switch (lua.lua_type(L, index)) {
    case lua.LUA_TNUMBER:
      return Math.trunc(lua.lua_tonumber(L, index))
    case lua.LUA_TSTRING:
      return lua.lua_tojsstring(L, index)
    case lua.LUA_TBOOLEAN:
      return lua.lua_toboolean(L, index) ? 1 : null
    case lua.LUA_TTABLE: {
      const at = lua.lua_absindex(L, index)
      lua.lua_getfield(L, at, to_luastring('err'))
      if (!lua.lua_isnil(L, -1)) throw new LuaScriptError(lua.lua_tojsstring(L, -1))
      lua.lua_pop(L, 1)
      lua.lua_getfield(L, at, to_luastring('ok'))
      if (!lua.lua_isnil(L, -1)) {
        const ok = lua.lua_tojsstring(L, -1)
        lua.lua_pop(L, 1)
        return ok
      }
      lua.lua_pop(L, 1)
      const items: unknown[] = []
      for (let i = 1; ; i++) {
        lua.lua_rawgeti(L, at, i)
        if (lua.lua_isnil(L, -1)) {
          lua.lua_pop(L, 1)
          break
        }
        items.push(readReply(L, -1))
        lua.lua_pop(L, 1)
      }
      return items
    }
    default:
      return null
  }
}

function pushStrings(L: LuaState, values: string[]) {
  lua.lua_createtable(L, values.length, 0)
  values.forEach((v, i) => {
    lua.lua_pushstring(L, to_luastring(v))
    lua.lua_rawseti(L, -2, i + 1)
  })
}

/** Runs a Redis script: KEYS, ARGV, redis.call and redis.pcall over `call`. */
export function runLuaScript(script: string, keys: string[], args: string[], call: (command: string[]) => unknown): unknown {
  const L = lauxlib.luaL_newstate()
  lualib.luaL_openlibs(L)
  const bridge = (protectedCall: boolean) => (state: LuaState) => {
    const command: string[] = []
    for (let i = 1; i <= lua.lua_gettop(state); i++) command.push(lua.lua_tojsstring(state, i))
    try {
      pushReply(state, call(command))
      return 1
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err)
      if (protectedCall) {
        lua.lua_createtable(state, 0, 1)
        lua.lua_pushstring(state, to_luastring(message))
        lua.lua_setfield(state, -2, to_luastring('err'))
        return 1
      }
      lua.lua_pushstring(state, to_luastring(message))
      return lua.lua_error(state)
    }
  }
  lua.lua_createtable(L, 0, 2)
  lua.lua_pushcfunction(L, bridge(false))
  lua.lua_setfield(L, -2, to_luastring('call'))
  lua.lua_pushcfunction(L, bridge(true))
  lua.lua_setfield(L, -2, to_luastring('pcall'))
  lua.lua_setglobal(L, to_luastring('redis'))
  pushStrings(L, keys)
  lua.lua_setglobal(L, to_luastring('KEYS'))
  pushStrings(L, args)
  lua.lua_setglobal(L, to_luastring('ARGV'))
  // a leading "#!lua flags=..." line is a Redis 7 shebang, not Lua
  const body = script.replace(/^#![^\n]*\n/, '')
  if (lauxlib.luaL_loadstring(L, to_luastring(body)) !== lua.LUA_OK)
    throw new LuaScriptError(`ERR Error compiling script: ${lua.lua_tojsstring(L, -1)}`)
  if (lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) throw new LuaScriptError(`ERR Error running script: ${lua.lua_tojsstring(L, -1)}`)
  return readReply(L, -1)
}
