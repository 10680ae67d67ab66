// node-redis's part of kura's client matrix (clients/matrix_test.go runs it).
//
// Usage: node check.mjs ADDR OTHER PREFIX
//
// Runs every check of the matrix through node-redis's typed API against the server at
// ADDR (host:port; OTHER is another node of the same cluster, or ADDR again) and prints
// one line per variant and check, "VARIANT CHECK name=value ..." or "VARIANT CHECK ERROR
// message", in the canonical form clients/doc.go describes.
import { createClient } from '@redis/client';

// node-redis 6 speaks RESP3 unless told otherwise.
const VARIANTS = [['resp3-default', {}], ['resp2', { RESP: 2 }]];

function text(v) {
  if (v === null || v === undefined) return 'nil';
  if (v === true) return '1';
  if (v === false) return '0';
  if (Array.isArray(v)) return '[' + v.map(text).join(',') + ']';
  if (v instanceof Map) return text(Object.fromEntries(v));
  if (typeof v === 'object' && !Buffer.isBuffer(v)) {
    return '{' + Object.keys(v).sort().map(k => k + ':' + text(v[k])).join(',') + '}';
  }
  return String(v);
}

const within = (v, lo, hi) => (typeof v === 'number' && v >= lo && v <= hi ? `${lo}..${hi}` : text(v));
const sleep = ms => new Promise(r => setTimeout(r, ms));

const checks = {
  async proto(r) {
    return [['resp', (await r.clientInfo()).resp]];
  },
  async strings(r, other, p) {
    await r.del([p + 'k1', p + 'k2', p + 'k3', p + 'none']);
    return [
      ['set', await r.set(p + 'k1', 'v1')], ['get', await r.get(p + 'k1')],
      ['get_other', await other.get(p + 'k1')], ['get_missing', await r.get(p + 'none')],
      ['mset', await r.mSet({ [p + 'k2']: 'a', [p + 'k3']: 'b' })],
      ['mget', await r.mGet([p + 'k1', p + 'k2', p + 'k3', p + 'none'])],
      ['exists', await r.exists([p + 'k1', p + 'k2', p + 'none'])],
      ['del', await r.del([p + 'k2', p + 'none'])], ['exists_after', await r.exists(p + 'k2')],
    ];
  },
  async set_options(r, other, p) {
    await r.del([p + 'k', p + 'none']);
    return [
      ['nx', await r.set(p + 'k', 'v1', { condition: 'NX' })],
      ['nx_again', await r.set(p + 'k', 'v2', { condition: 'NX' })],
      ['xx', await r.set(p + 'k', 'v3', { condition: 'XX' })],
      ['xx_missing', await r.set(p + 'none', 'x', { condition: 'XX' })],
      ['get_option', await r.set(p + 'k', 'v4', { GET: true })], ['value', await r.get(p + 'k')],
    ];
  },
  async hashes(r, other, p) {
    const h = p + 'h';
    await r.del([h, p + 'none']);
    return [
      ['hset', await r.hSet(h, { f1: 'v1', f2: 'v2' })], ['hset_update', await r.hSet(h, 'f1', 'x')],
      ['hget', await r.hGet(h, 'f1')], ['hget_missing', await r.hGet(h, 'nofield')],
      ['hgetall', await r.hGetAll(h)], ['hlen', await r.hLen(h)],
      ['hdel', await r.hDel(h, ['f2', 'nofield'])], ['hlen_after', await r.hLen(h)],
      ['hgetall_other', await other.hGetAll(h)], ['hgetall_missing', await r.hGetAll(p + 'none')],
    ];
  },
  async ttl(r, other, p) {
    const k = p + 'k', px = p + 'px', none = p + 'none';
    await r.del([k, px, none]);
    const out = [['set_px', await r.set(px, 'v', { expiration: { type: 'PX', value: 2000 } })]];
    const start = Date.now();
    out.push(
      ['pttl', within(await r.pTTL(px), 1, 2000)], ['set', await r.set(k, 'v')],
      ['ttl_none', await r.ttl(k)], ['expire', await r.expire(k, 100)],
      ['ttl', within(await r.ttl(k), 1, 100)], ['persist', await r.persist(k)],
      ['ttl_persisted', await r.ttl(k)], ['persist_again', await r.persist(k)],
      ['set_ex', await r.set(k, 'v', { expiration: { type: 'EX', value: 50 } })],
      ['ttl_ex', within(await r.ttl(k), 1, 50)], ['ttl_missing', await r.ttl(none)],
      ['expire_missing', await r.expire(none, 10)]);
    await sleep(Math.max(0, 2300 - (Date.now() - start)));
    out.push(['expired', await r.get(px)], ['ttl_expired', await r.ttl(px)]);
    return out;
  },
  async scan(r, other, p) {
    const want = new Set();
    for (let i = 0; i < 40; i++) want.add(p + 'k' + String(i).padStart(2, '0'));
    await r.mSet(Object.fromEntries([...want].map(k => [k, 'v'])));
    await r.hSet(p + 'h', 'f', 'v');
    want.add(p + 'h');
    const got = new Set();
    for await (const keys of r.scanIterator({ MATCH: p + '*', COUNT: 7 })) keys.forEach(k => got.add(k));
    const same = got.size === want.size && [...got].every(k => want.has(k));
    return [['keys', got.size], ['same', same]];
  },
  async counters(r, other, p) {
    const n = p + 'n', s = p + 's', none = p + 'none';
    await r.del([n, s, none]);
    const out = [
      ['incr', await r.incr(n)], ['incr_again', await r.incr(n)], ['incrby', await r.incrBy(n, 10)],
      ['decr', await r.decr(n)], ['get', await r.get(n)], ['get_other', await other.get(n)]];
    await r.set(s, 'abc');
    try {
      out.push(['incr_text', await r.incr(s)]);
    } catch (e) {
      out.push(['incr_text', 'error']);
    }
    out.push(['decr_missing', await r.decr(none)]);
    return out;
  },
  async pipeline(r, other, p) {
    const k = p + 'k', n = p + 'n', h = p + 'h', none = p + 'none';
    await r.del([k, n, h, none]);
    // execAsPipeline sends the batch without MULTI/EXEC.
    const res = await r.multi().set(k, 'v').incr(n).incr(n).get(k).hSet(h, 'f', 'x').hGet(h, 'f')
      .get(none).del(k).execAsPipeline();
    return [['replies', res]];
  },
};

async function connect(addr, opts) {
  const i = addr.lastIndexOf(':');
  const c = createClient({ socket: { host: addr.slice(0, i), port: Number(addr.slice(i + 1)), reconnectStrategy: false }, ...opts });
  c.on('error', () => {}); // a failed command rejects its promise; this only keeps the process up
  await c.connect();
  return c;
}

const [addr, otherAddr, prefix] = process.argv.slice(2);
for (const [variant, opts] of VARIANTS) {
  const r = await connect(addr, opts), other = await connect(otherAddr, opts);
  for (const [name, check] of Object.entries(checks)) {
    let line;
    try {
      line = (await check(r, other, `${prefix}:${variant}:${name}:`)).map(([k, v]) => `${k}=${text(v)}`).join(' ');
    } catch (e) {
      line = 'ERROR ' + String(e && e.message).replace(/\n/g, ' ');
    }
    console.log(`${variant} ${name} ${line}`);
  }
  await r.close();
  await other.close();
}
